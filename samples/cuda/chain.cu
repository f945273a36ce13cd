// chain.cu - a plain CUDA C program (no Python) for aicprof: per step, a chain of elementwise
// kernels (scale, add bias, ReLU, square) each writing its intermediate to device memory, then
// a two-pass sum reduction, inside an NVTX range "step N". The analyzer should find the chain.
// Build: nvcc -O2 -o chain samples/cuda/chain.cu     Run: ./chain [steps] [n]
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "chain: %s: %s\n", #x, cudaGetErrorString(e_));            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void scale(float *y, const float *x, float a, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = a * x[i];
}

__global__ void add_bias(float *y, const float *x, const float *b, int n, int cols)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = x[i] + b[i % cols];
}

__global__ void relu(float *y, const float *x, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = x[i] > 0.f ? x[i] : 0.f;
}

__global__ void square(float *y, const float *x, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = x[i] * x[i];
}

// Two passes, so that the sum is the same in every run: per-block partial sums, then one block
// adds them in a fixed order.
__global__ void sum_reduce(float *partial, const float *x, int n)
{
	__shared__ float s[256];
	float acc = 0.f;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		acc += x[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partial[blockIdx.x] = s[0];
}

__global__ void sum_partials(float *out, const float *partial, int n)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		float acc = 0.f;
		for (int i = 0; i < n; i++)
			acc += partial[i];
		*out = acc;
	}
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 10;
	int n = argc > 2 ? atoi(argv[2]) : (1 << 24);
	int cols = 1024;
	float *x, *b, *t0, *t1, *t2, *t3, *out, *partial;
	CHECK(cudaMalloc(&x, n * sizeof(float)));
	CHECK(cudaMalloc(&b, cols * sizeof(float)));
	CHECK(cudaMalloc(&out, sizeof(float)));
	CHECK(cudaMalloc(&partial, 132 * 8 * sizeof(float)));
	float *h = (float *)malloc(n * sizeof(float));
	srand(1);
	for (int i = 0; i < n; i++)
		h[i] = (float)rand() / RAND_MAX - 0.5f;
	CHECK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(b, h, cols * sizeof(float), cudaMemcpyHostToDevice));
	int grid = 132 * 8, block = 256;
	float total = 0.f;
	for (int s = 0; s < steps; s++) {
		char name[32];
		snprintf(name, sizeof(name), "step %d", s);
		nvtxRangePushA(name);
		CHECK(cudaMalloc(&t0, n * sizeof(float)));
		CHECK(cudaMalloc(&t1, n * sizeof(float)));
		CHECK(cudaMalloc(&t2, n * sizeof(float)));
		CHECK(cudaMalloc(&t3, n * sizeof(float)));
		scale<<<grid, block>>>(t0, x, 0.5f, n);
		add_bias<<<grid, block>>>(t1, t0, b, n, cols);
		relu<<<grid, block>>>(t2, t1, n);
		square<<<grid, block>>>(t3, t2, n);
		CHECK(cudaMemset(out, 0, sizeof(float)));
		sum_reduce<<<grid, block>>>(partial, t3, n);
		sum_partials<<<1, 32>>>(out, partial, grid);
		CHECK(cudaGetLastError());
		float r;
		CHECK(cudaMemcpy(&r, out, sizeof(float), cudaMemcpyDeviceToHost));
		total += r;
		CHECK(cudaFree(t0));
		CHECK(cudaFree(t1));
		CHECK(cudaFree(t2));
		CHECK(cudaFree(t3));
		nvtxRangePop();
	}
	printf("chain: %d steps, total %.3f\n", steps, total);
	free(h);
	return 0;
}
