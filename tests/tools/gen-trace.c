/*
 * gen-trace.c - writes a synthetic aicprof trace (format 1) of N kernels to stdout, for the
 * analyzer's scale benchmark and tests: a header, str and site records, and per training step
 * an NVTX push/pop ("step K"), cudaMallocAsync-style alloc/free records, launch records with
 * their args (pointer words with [offset, address, alloc id, offset in alloc], scalar N) and
 * the kernel activity records, which arrive in batches as CUPTI's buffers would.
 *
 * The step is MLP-like: layer_norm -> gemm -> gelu -> dropout -> add (residual), then filler
 * elementwise kernels (mul) up to the period, then the optimizer's multi_tensor_apply.
 *
 * usage: gen-trace [-n KERNELS] [-p KERNELS_PER_STEP] [--no-nvtx] [-b BATCH]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *names[] = {
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
    "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
    "float*, c10::BFloat16*)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
    "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
    "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, "
    "unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
    "at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<bool, "
    "unsigned int>, unsigned int, float, at::PhiloxCudaState)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, "
    "3ul>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
    "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
    "std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
    "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<4>, at::native::(anonymous "
    "namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, float*, "
    "double, double, double, double, double, bool, float*, float*>(...)",
};

struct kact {
	long c, start, end, name, stream;
	int gx, bx;
};

static struct kact *pend;
static int npend, batch = 256;

static void flush_act(void)
{
	for (int i = 0; i < npend; i++) {
		struct kact *k = &pend[i];
		printf(
		    "{\"t\":\"kernel\",\"c\":%ld,\"name\":%ld,\"dev\":0,\"ctx\":1,\"stream\":%ld,"
		    "\"start\":%ld,\"end\":%ld,\"grid\":[%d,1,1],\"block\":[%d,1,1],\"regs\":32,"
		    "\"ssmem\":0,\"dsmem\":0,\"graph\":0,\"gnode\":0}\n",
		    k->c, k->name, k->stream, k->start, k->end, k->gx, k->bx);
	}
	npend = 0;
}

static long seq, corr, alloc_id, ts = 1764430000000000000L, gpu = 1764430000000500000L;

static long do_alloc(long size)
{
	long id = alloc_id++;
	printf("{\"t\":\"alloc\",\"seq\":%ld,\"ts\":%ld,\"tid\":1001,\"id\":%ld,\"ptr\":\"0x7f%"
	       "010lx\","
	       "\"size\":%ld,\"api\":\"cuMemAllocAsync\",\"stream\":\"0x55d0c0a0\",\"site\":1}\n",
	       seq++, ts++, id, (unsigned long)id << 24, size);
	return id;
}

static void do_free(long id)
{
	printf(
	    "{\"t\":\"free\",\"seq\":%ld,\"ts\":%ld,\"tid\":1001,\"id\":%ld,\"ptr\":\"0x7f%010lx\","
	    "\"api\":\"cuMemFreeAsync\",\"stream\":\"0x55d0c0a0\"}\n",
	    seq++, ts++, id, (unsigned long)id << 24);
}

/*
 * One launch: fn, site, numel, pointers (alloc ids), duration ns. ATen's loops get their layout
 * (int N, functor, std::array<char*, K>); dropout its TensorInfo parameters (in, out, mask),
 * each with the data pointer first, then the element count.
 */
static void launch(int fn, int site, long n, const long *ptrs, int np, long dur)
{
	long c = ++corr;
	ts += 3000;
	printf(
	    "{\"t\":\"launch\",\"seq\":%ld,\"ts\":%ld,\"tid\":1001,\"c\":%ld,\"api\":"
	    "\"cuLaunchKernel\","
	    "\"fn\":%d,\"grid\":[%ld,1,1],\"block\":[128,1,1],\"smem\":0,\"stream\":\"0x55d0c0a0\","
	    "\"site\":%d,\"args\":[",
	    seq++, ts, c, fn + 1, (n + 511) / 512, site);
	if (fn == 3) {
		for (int i = 0; i < np; i++)
			printf("{\"i\":%d,\"o\":%d,\"n\":216,\"p\":[[0,\"0x7f%010lx\",%ld,0]]},", i,
			       216 * i, (unsigned long)ptrs[i] << 24, ptrs[i]);
		printf("{\"i\":%d,\"o\":%d,\"n\":4,\"v\":\"0x%lx\"}]}\n", np, 216 * np, n);
	} else {
		printf("{\"i\":0,\"o\":0,\"n\":4,\"v\":\"0x%lx\"},{\"i\":1,\"o\":8,\"n\":1},"
		       "{\"i\":2,\"o\":16,\"n\":%d,\"p\":[",
		       n, np * 8);
		for (int i = 0; i < np; i++)
			printf("%s[%d,\"0x7f%010lx\",%ld,0]", i ? "," : "", 8 * i,
			       (unsigned long)ptrs[i] << 24, ptrs[i]);
		printf("]}]}\n");
	}
	if (gpu < ts + 5000)
		gpu = ts + 5000;
	pend[npend++] = (struct kact){c, gpu, gpu + dur, fn + 1, 7, (int)((n + 511) / 512), 128};
	gpu += dur + 1000;
	if (npend >= batch)
		flush_act();
}

int main(int argc, char **argv)
{
	long total = 1000, period = 12;
	int nvtx = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			total = atol(argv[++i]);
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			period = atol(argv[++i]);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-nvtx"))
			nvtx = 0;
		else {
			fprintf(stderr, "usage: gen-trace [-n KERNELS] [-p KERNELS_PER_STEP] "
			                "[--no-nvtx] [-b BATCH]\n");
			return 129;
		}
	}
	if (period < 6)
		period = 6;
	if (batch < 1)
		batch = 1;
	pend = calloc(batch + 1, sizeof(*pend));
	static char obuf[1 << 20];
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	printf("{\"t\":\"header\",\"format\":1,\"tool\":\"aicprof 0.1.0\",\"pid\":4242,\"ppid\":1,"
	       "\"host\":\"gen\",\"argv\":[\"python\",\"train.py\"],\"exe\":\"/usr/bin/python3\","
	       "\"cwd\":\"/src\",\"clock\":\"realtime\",\"ts\":%ld,\"versions\":{\"driver\":13000},"
	       "\"devices\":[{\"id\":0,\"name\":\"NVIDIA H200\",\"cc\":\"9.0\",\"sm_count\":132,"
	       "\"mem_clock_khz\":2619000,\"bus_width_bits\":6144,\"peak_bw_gbs\":4022.8,"
	       "\"total_mem\":150754820096,\"l2_bytes\":62914560,\"clock_khz\":1980000}],"
	       "\"config\":{},\"alloc_backend\":\"cudaMallocAsync (set by aicprof)\"}\n",
	       ts);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		printf("{\"t\":\"str\",\"id\":%zu,\"s\":\"", i + 1);
		for (const char *p = names[i]; *p; p++)
			putchar(*p == '"' ? '\'' : *p);
		printf("\"}\n");
	}
	static const int lines[] = {10, 11, 12, 13, 14, 15, 20};
	for (int i = 0; i < 7; i++)
		printf("{\"t\":\"site\",\"id\":%d,\"frames\":[{\"file\":\"train.py\",\"line\":%d,"
		       "\"col\":8,"
		       "\"end_col\":30,\"func\":\"forward\",\"user\":true},{\"file\":\"torch/nn/"
		       "modules/"
		       "module.py\",\"line\":1790,\"func\":\"_call_impl\",\"user\":false}]}\n",
		       i + 1, lines[i]);
	const long N = 4L << 20, B = N * 2; /* bf16 activations: 4 Mi elements, 8 MiB */
	long x0 = do_alloc(B), w = do_alloc(4L << 20), wb = do_alloc(4096),
	     w1 = do_alloc(32L << 20);
	long opt = do_alloc(64L << 20);
	long k = 0;
	for (long step = 0; k < total; step++) {
		if (nvtx)
			printf("{\"t\":\"push\",\"seq\":%ld,\"ts\":%ld,\"tid\":1001,\"text\":"
			       "\"step %ld\","
			       "\"domain\":\"\"}\n",
			       seq++, ts++, step);
		long a = do_alloc(B), h = do_alloc(B), g = do_alloc(B), d = do_alloc(B),
		     y = do_alloc(B);
		long m = do_alloc(N / 8);
		launch(0, 1, N, (long[]){a, x0, w, wb}, 4, 9000);
		launch(1, 2, N, (long[]){a, w1, h}, 3, 40000);
		launch(2, 3, N, (long[]){g, h}, 2, 5200);
		launch(3, 4, N, (long[]){g, d, m}, 3, 6100);
		launch(4, 5, N, (long[]){y, d, x0}, 3, 7300);
		k += 5;
		for (long f = 0; f < period - 6 && k < total; f++, k++)
			launch(5, 6, N, (long[]){f % 2 ? h : y, f % 2 ? y : h, w}, 3, 6000 + f % 3);
		if (k < total) {
			launch(6, 7, 1 << 20, (long[]){opt, w, w1}, 3, 30000);
			k++;
		}
		do_free(a);
		do_free(h);
		do_free(g);
		do_free(d);
		do_free(y);
		do_free(m);
		if (nvtx)
			printf("{\"t\":\"pop\",\"seq\":%ld,\"ts\":%ld,\"tid\":1001}\n", seq++,
			       ts++);
		ts += 200000; /* data loading between steps */
		gpu += 10000;
	}
	flush_act();
	printf("{\"t\":\"end\",\"ts\":%ld,\"reason\":\"exit\",\"records\":%ld,\"dropped\":{"
	       "\"records\":0,"
	       "\"activity\":0},\"kernels\":%ld}\n",
	       ts, seq, k);
	free(pend);
	return 0;
}
