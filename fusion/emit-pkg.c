/*
 * emit-pkg.c - the package aicprof_fused/__init__.py: apply() installs the function groups of
 * summary.json's "functions" (analyzer/funcgroup.c) into the library code at run time, the
 * Liger-Kernel way, without editing a library file (docs/fusion.md, "The aicprof_fused package").
 *
 * The file is a fixed runtime (pkg_runtime below) after a generated table, _FUNCS: per function
 * its import path and qualified name, its form ("fused": a generated group, whose module
 * aicprof_fused/<name>/<name>.py is loaded by path; "sdpa": transformers' sdpa_attention_forward
 * in place of eager_attention_forward), and for a group its inputs (kind "arg": the call's
 * tensor arguments in order; "param": the module's own parameters matched by numel and dtype),
 * element counts, row length and dropout. The table is JSON in a raw string (JSON cannot hold
 * three quotes in a row outside its strings, and escapes them inside), read with json.loads.
 * apply() imports each library lazily, records in applied() what it replaced and why anything
 * was not (ImportError, a missing attribute, AICPROF_FUSED=0), and never raises. A wrapper
 * binds and guards every call (CUDA, dtypes, contiguity, shapes and broadcast ratios, autograd
 * where the group has no backward) and runs the original when a guard fails; the first call of
 * each shape class runs both without grad and compares them (rtol 2e-2, atol 2e-2, NaN and inf
 * at the same positions); a mismatch or a failure to build or launch disables that replacement
 * with one warning on stderr. counts() says how often each fused form ran.
 */
#include "fusion/fusion.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char pkg_runtime[] =
    "import functools\n"
    "import importlib\n"
    "import importlib.util\n"
    "import inspect\n"
    "import json\n"
    "import os\n"
    "import sys\n"
    "\n"
    "_HERE = os.path.dirname(os.path.abspath(__file__))\n"
    "RTOL = 2e-2\n"
    "ATOL = 2e-2\n"
    "_TORCH_DTYPES = {\"f32\": \"float32\", \"f16\": \"float16\", \"bf16\": \"bfloat16\", "
    "\"bool\": \"bool\"}\n"
    "_STATE = {}   # key -> the record applied() reports\n"
    "_COUNTS = {}  # key -> calls that ran the fused form\n"
    "_GROUPS = {}  # group name -> its loaded module\n"
    "\n"
    "\n"
    "def applied():\n"
    "    \"\"\"What apply() replaced and why anything was not, by \"module.qualname\": a dict "
    "with\n"
    "    \"applied\" (bool), \"reason\", \"form\", \"verified\" (shape class -> result) and "
    "\"fallbacks\"\n"
    "    (calls that ran the original, with the last reason).\"\"\"\n"
    "    return {k: json.loads(json.dumps(v, default=str)) for k, v in _STATE.items()}\n"
    "\n"
    "\n"
    "def counts():\n"
    "    \"\"\"Calls that ran the fused form (not the verification), by "
    "\"module.qualname\".\"\"\"\n"
    "    return dict(_COUNTS)\n"
    "\n"
    "\n"
    "def _key(spec):\n"
    "    return spec[\"module\"] + \".\" + spec[\"qualname\"]\n"
    "\n"
    "\n"
    "def _record(spec, ok, reason):\n"
    "    r = _STATE.setdefault(_key(spec), {\"form\": spec[\"form\"], \"verified\": {},\n"
    "                                        \"fallbacks\": 0, \"last_fallback\": None})\n"
    "    r[\"applied\"] = ok\n"
    "    r[\"reason\"] = reason\n"
    "    return r\n"
    "\n"
    "\n"
    "def _warn(key, msg):\n"
    "    sys.stderr.write(\"aicprof_fused: %s: %s; the original runs from now on\\n\" % (key, "
    "msg))\n"
    "\n"
    "\n"
    "def _resolve(module, qualname):\n"
    "    \"\"\"(owner, attribute, current value) of module.qualname; ImportError, "
    "AttributeError.\"\"\"\n"
    "    owner = importlib.import_module(module)\n"
    "    parts = qualname.split(\".\")\n"
    "    for p in parts[:-1]:\n"
    "        owner = getattr(owner, p)\n"
    "    return owner, parts[-1], getattr(owner, parts[-1])\n"
    "\n"
    "\n"
    "def _load_group(name):\n"
    "    if name not in _GROUPS:\n"
    "        path = os.path.join(_HERE, name, name + \".py\")\n"
    "        spec = importlib.util.spec_from_file_location(__name__ + \".\" + name, path)\n"
    "        mod = importlib.util.module_from_spec(spec)\n"
    "        spec.loader.exec_module(mod)\n"
    "        _GROUPS[name] = mod\n"
    "    return _GROUPS[name]\n"
    "\n"
    "\n"
    "def apply():\n"
    "    \"\"\"Replaces the library functions of _FUNCS by their fused forms (see the module's\n"
    "    docstring); returns applied(). Never raises; AICPROF_FUSED=0 makes it do nothing.\"\"\"\n"
    "    if os.environ.get(\"AICPROF_FUSED\", \"1\").strip() == \"0\":\n"
    "        for spec in _FUNCS:\n"
    "            if not _STATE.get(_key(spec), {}).get(\"applied\"):\n"
    "                _record(spec, False, \"AICPROF_FUSED=0\")\n"
    "        return applied()\n"
    "    for spec in _FUNCS:\n"
    "        if _STATE.get(_key(spec), {}).get(\"applied\"):\n"
    "            continue\n"
    "        try:\n"
    "            _apply_one(spec)\n"
    "        except Exception as e:  # apply() never raises: the original stays\n"
    "            _record(spec, False, \"%s: %s\" % (type(e).__name__, e))\n"
    "    return applied()\n"
    "\n"
    "\n"
    "def _apply_one(spec):\n"
    "    try:\n"
    "        import torch  # noqa: F401\n"
    "    except ImportError as e:\n"
    "        _record(spec, False, \"torch cannot be imported (%s)\" % e)\n"
    "        return\n"
    "    try:\n"
    "        owner, attr, orig = _resolve(spec[\"module\"], spec[\"qualname\"])\n"
    "    except ImportError as e:\n"
    "        _record(spec, False, \"%s cannot be imported (%s)\" % (spec[\"module\"], e))\n"
    "        return\n"
    "    except AttributeError as e:\n"
    "        _record(spec, False, \"%s has no %s (%s)\" % (spec[\"module\"], spec[\"qualname\"], "
    "e))\n"
    "        return\n"
    "    if getattr(orig, \"_aicprof_original\", None) is not None:\n"
    "        _record(spec, True, \"already replaced\")\n"
    "        return\n"
    "    if not callable(orig):\n"
    "        _record(spec, False, \"%s is not callable\" % _key(spec))\n"
    "        return\n"
    "    rec = _record(spec, False, \"\")\n"
    "    try:\n"
    "        if spec[\"form\"] == \"sdpa\":\n"
    "            wrapper, note = _make_sdpa(spec, orig, rec)\n"
    "        else:\n"
    "            wrapper, note = _make_fused(spec, orig, rec)\n"
    "    except ImportError as e:\n"
    "        _record(spec, False, \"its replacement cannot be imported (%s)\" % e)\n"
    "        return\n"
    "    functools.update_wrapper(wrapper, orig)\n"
    "    wrapper._aicprof_original = orig\n"
    "    setattr(owner, attr, wrapper)\n"
    "    _COUNTS.setdefault(_key(spec), 0)\n"
    "    _record(spec, True, note)\n"
    "\n"
    "\n"
    "def _fallback(rec, why):\n"
    "    rec[\"fallbacks\"] += 1\n"
    "    rec[\"last_fallback\"] = why\n"
    "\n"
    "\n"
    "def _compare(torch, ref, got):\n"
    "    \"\"\"None when got matches ref (shape, dtype, NaN and inf positions, finite values "
    "within\n"
    "    RTOL/ATOL), else why not.\"\"\"\n"
    "    if not isinstance(ref, torch.Tensor) or not isinstance(got, torch.Tensor):\n"
    "        return \"the original returned %s, not a tensor\" % type(ref).__name__\n"
    "    if tuple(ref.shape) != tuple(got.shape):\n"
    "        return \"shape %s, the original's %s\" % (tuple(got.shape), tuple(ref.shape))\n"
    "    if ref.dtype != got.dtype:\n"
    "        return \"dtype %s, the original's %s\" % (got.dtype, ref.dtype)\n"
    "    r, g = ref.float(), got.float()\n"
    "    if not torch.equal(torch.isnan(r), torch.isnan(g)):\n"
    "        return \"NaN at other positions than the original's\"\n"
    "    ri, gi = torch.isinf(r), torch.isinf(g)\n"
    "    if not torch.equal(ri, gi) or not torch.equal(r[ri], g[gi]):\n"
    "        return \"inf at other positions than the original's\"\n"
    "    fin = torch.isfinite(r)\n"
    "    if not torch.allclose(g[fin], r[fin], rtol=RTOL, atol=ATOL):\n"
    "        d = (g[fin] - r[fin]).abs().max().item()\n"
    "        return \"values differ from the original's (max |diff| %g, rtol %g atol %g)\" % (d, "
    "RTOL, ATOL)\n"
    "    return None\n"
    "\n"
    "\n"
    "def _trailing(t, full):\n"
    "    \"\"\"Whether t broadcasts over full's leading dimensions (what the kernel's i % numel "
    "does).\"\"\"\n"
    "    ts = list(t.shape)\n"
    "    while ts and ts[0] == 1:\n"
    "        ts.pop(0)\n"
    "    fs = list(full.shape)\n"
    "    return len(ts) <= len(fs) and fs[len(fs) - len(ts):] == ts\n"
    "\n"
    "\n"
    "def _bind(torch, spec, dtypes, args, kwargs):\n"
    "    \"\"\"The group's inputs for this call, or (None, why) when a guard fails.\"\"\"\n"
    "    method = \".\" in spec[\"qualname\"]\n"
    "    this = args[0] if method and args else None\n"
    "    rest = list(args[1:] if method else args) + list(kwargs.values())\n"
    "    tensors = [a for a in rest if isinstance(a, torch.Tensor)]\n"
    "    want = [i for i in spec[\"inputs\"] if i[\"kind\"] == \"arg\"]\n"
    "    if len(tensors) != len(want):\n"
    "        return None, \"the call passes %d tensors, the group takes %d\" % (len(tensors), "
    "len(want))\n"
    "    params = None\n"
    "    if any(i[\"kind\"] == \"param\" for i in spec[\"inputs\"]):\n"
    "        if this is None or not hasattr(this, \"parameters\"):\n"
    "            return None, \"no module whose parameters the group reads\"\n"
    "        params = list(this.parameters(recurse=False))\n"
    "    ins, it, used = [], iter(tensors), set()\n"
    "    for inp, dt in zip(spec[\"inputs\"], dtypes):\n"
    "        if inp[\"kind\"] == \"arg\":\n"
    "            ins.append(next(it))\n"
    "            continue\n"
    "        c = [p for p in params if id(p) not in used and p.numel() == inp[\"numel\"] and "
    "p.dtype == dt]\n"
    "        if len(c) != 1:\n"
    "            return None, \"%d parameters of %s elements of %s, not one\" % (len(c), "
    "inp[\"numel\"], dt)\n"
    "        used.add(id(c[0]))\n"
    "        ins.append(c[0])\n"
    "    for inp, t, dt in zip(spec[\"inputs\"], ins, dtypes):\n"
    "        if not t.is_cuda:\n"
    "            return None, \"%s is not on a CUDA device\" % inp[\"name\"]\n"
    "        if t.dtype != dt:\n"
    "            return None, \"%s is %s, the group's %s\" % (inp[\"name\"], t.dtype, dt)\n"
    "        if not t.is_contiguous():\n"
    "            return None, \"%s is not contiguous\" % inp[\"name\"]\n"
    "    full = ins[spec[\"shape\"]]\n"
    "    n = full.numel()\n"
    "    if n == 0:\n"
    "        return None, \"no elements\"\n"
    "    if spec[\"cols\"] and (full.dim() == 0 or full.shape[-1] != spec[\"cols\"]):\n"
    "        return None, \"rows of %s elements, the group's %d\" % (\n"
    "            full.shape[-1] if full.dim() else 1, spec[\"cols\"])\n"
    "    for inp, t in zip(spec[\"inputs\"], ins):\n"
    "        m = inp.get(\"numel\")\n"
    "        if not m:\n"
    "            if tuple(t.shape) != tuple(full.shape):\n"
    "                return None, \"%s has shape %s, %s %s\" % (inp[\"name\"], tuple(t.shape),\n"
    "                                                         "
    "spec[\"inputs\"][spec[\"shape\"]][\"name\"],\n"
    "                                                         tuple(full.shape))\n"
    "            continue\n"
    "        if inp[\"kind\"] == \"param\":\n"
    "            ok = t.numel() == m\n"
    "        else:\n"
    "            ok = n % t.numel() == 0 and n // t.numel() == spec[\"numel\"] // m\n"
    "        if not ok or not _trailing(t, full):\n"
    "            return None, \"%s (%d elements) is not broadcast as in the trace\" % "
    "(inp[\"name\"], t.numel())\n"
    "    return ins, None\n"
    "\n"
    "\n"
    "def _make_fused(spec, orig, rec):\n"
    "    import torch\n"
    "    grp = _load_group(spec[\"name\"])\n"
    "    run = getattr(grp, spec[\"name\"])\n"
    "    dtypes = [getattr(torch, _TORCH_DTYPES[i[\"dtype\"]]) for i in spec[\"inputs\"]]\n"
    "    key = _key(spec)\n"
    "    st = {\"off\": None, \"classes\": {}}\n"
    "\n"
    "    def fused(ins):\n"
    "        return run(*ins)[0]\n"
    "\n"
    "    def wrapper(*args, **kwargs):\n"
    "        if st[\"off\"]:\n"
    "            return orig(*args, **kwargs)\n"
    "        ins, why = _bind(torch, spec, dtypes, args, kwargs)\n"
    "        if ins is None:\n"
    "            _fallback(rec, why)\n"
    "            return orig(*args, **kwargs)\n"
    "        if (torch.is_grad_enabled() and not grp.HAS_BACKWARD\n"
    "                and any(t.requires_grad for t in ins)):\n"
    "            _fallback(rec, \"autograd needs a backward the group does not have\")\n"
    "            return orig(*args, **kwargs)\n"
    "        if spec[\"ndrop\"] and not getattr(args[0] if args else None, \"training\", True):\n"
    "            _fallback(rec, \"the module is in eval mode and the group has dropout\")\n"
    "            return orig(*args, **kwargs)\n"
    "        cls = repr([(tuple(t.shape), str(t.dtype)) for t in ins])\n"
    "        try:\n"
    "            if cls not in st[\"classes\"]:\n"
    "                if spec[\"ndrop\"]:\n"
    "                    res = \"not verified: the group has dropout (p %s), which cannot be "
    "compared elementwise\" % spec[\"dropout_p\"]\n"
    "                else:\n"
    "                    with torch.no_grad():\n"
    "                        res = _compare(torch, orig(*args, **kwargs), fused(ins))\n"
    "                    res = res or \"verified\"\n"
    "                st[\"classes\"][cls] = res\n"
    "                rec[\"verified\"][cls] = res\n"
    "                if not (res == \"verified\" or res.startswith(\"not verified\")):\n"
    "                    st[\"off\"] = res\n"
    "                    rec[\"applied\"] = False\n"
    "                    rec[\"reason\"] = \"disabled on first use: \" + res\n"
    "                    _warn(key, \"disabled: \" + res)\n"
    "                    return orig(*args, **kwargs)\n"
    "            out = fused(ins)\n"
    "        except Exception as e:  # a build or launch failure: the original from now on\n"
    "            st[\"off\"] = str(e)\n"
    "            rec[\"applied\"] = False\n"
    "            rec[\"reason\"] = \"disabled: %s: %s\" % (type(e).__name__, e)\n"
    "            _warn(key, \"disabled: %s: %s\" % (type(e).__name__, e))\n"
    "            return orig(*args, **kwargs)\n"
    "        _COUNTS[key] = _COUNTS.get(key, 0) + 1\n"
    "        return out\n"
    "\n"
    "    note = \"replaced by the fused group %s (%s)\" % (\n"
    "        spec[\"name\"], \"backward: %s\" % (\"fused\" if getattr(grp, \"_FUSED_BWD\", False)\n"
    "                                        else \"recomputed\" if grp.HAS_BACKWARD else "
    "\"none\"))\n"
    "    if spec[\"ndrop\"]:\n"
    "        note += \"; not verified on first use: the group has dropout\"\n"
    "    return wrapper, note\n"
    "\n"
    "\n"
    "_SDPA_KNOWN = (\"module\", \"query\", \"key\", \"value\", \"attention_mask\", \"scaling\", "
    "\"dropout\")\n"
    "\n"
    "\n"
    "def _make_sdpa(spec, orig, rec):\n"
    "    import torch\n"
    "    from transformers.integrations.sdpa_attention import sdpa_attention_forward as sdpa\n"
    "    sig = inspect.signature(orig)\n"
    "    names = list(sig.parameters)\n"
    "    varkw = [p.name for p in sig.parameters.values() if p.kind == p.VAR_KEYWORD]\n"
    "    others = [p for p in sig.parameters.values() if p.name not in _SDPA_KNOWN\n"
    "              and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]\n"
    "    if any(n not in names for n in _SDPA_KNOWN[:5]):\n"
    "        raise ImportError(\"%s does not take (module, query, key, value, attention_mask)\" % "
    "_key(spec))\n"
    "    key = _key(spec)\n"
    "    st = {\"off\": None, \"classes\": {}}\n"
    "\n"
    "    def plan(args, kwargs):\n"
    "        try:\n"
    "            b = sig.bind(*args, **kwargs)\n"
    "        except TypeError as e:\n"
    "            return None, \"arguments: %s\" % e\n"
    "        b.apply_defaults()\n"
    "        a = b.arguments\n"
    "        extra = dict(a.get(varkw[0], {})) if varkw else {}\n"
    "        for p in others:\n"
    "            if a.get(p.name, p.default) is not p.default and a.get(p.name) is not None:\n"
    "                return None, \"argument %s is given\" % p.name\n"
    "        mod, q, k, v, mask = (a[\"module\"], a[\"query\"], a[\"key\"], a[\"value\"], "
    "a[\"attention_mask\"])\n"
    "        if not all(isinstance(t, torch.Tensor) for t in (q, k, v)) or not q.is_cuda:\n"
    "            return None, \"query, key and value are not CUDA tensors\"\n"
    "        cfg = getattr(mod, \"config\", None)\n"
    "        if extra.get(\"output_attentions\") or getattr(cfg, \"output_attentions\", False):\n"
    "            return None, \"the attention weights are asked for\"\n"
    "        if \"scaling\" in names:\n"
    "            scaling = a.get(\"scaling\")\n"
    "        elif hasattr(mod, \"scale_attn_weights\"):\n"
    "            scaling = v.size(-1) ** -0.5 if mod.scale_attn_weights else 1.0\n"
    "            if getattr(mod, \"scale_attn_by_inverse_layer_idx\", False):\n"
    "                scaling /= float(mod.layer_idx + 1)\n"
    "        else:\n"
    "            return None, \"the module's attention scale is unknown\"\n"
    "        drop_mod = None\n"
    "        if \"dropout\" in names:\n"
    "            dropout = a.get(\"dropout\") or 0.0\n"
    "        else:\n"
    "            drop_mod = getattr(mod, \"attn_dropout\", None)\n"
    "            if drop_mod is not None and not hasattr(drop_mod, \"p\"):\n"
    "                return None, \"the module's attention dropout is not a Dropout\"\n"
    "            dropout = drop_mod.p if drop_mod is not None and drop_mod.training else 0.0\n"
    "        for n in (\"output_attentions\", \"is_causal\", \"dropout\", \"scaling\"):\n"
    "            extra.pop(n, None)\n"
    "        return (mod, q, k, v, mask, scaling, dropout, drop_mod, extra, a), None\n"
    "\n"
    "    def run(p, dropout):\n"
    "        mod, q, k, v, mask, scaling, _, _, extra, _ = p\n"
    "        return sdpa(mod, q, k, v, mask, dropout=dropout, scaling=scaling, is_causal=False, "
    "**extra)\n"
    "\n"
    "    def reference(p, args, kwargs):\n"
    "        \"\"\"The original with its dropout forced to 0.\"\"\"\n"
    "        drop_mod, a = p[7], p[9]\n"
    "        if \"dropout\" in names:\n"
    "            kw = dict(a)\n"
    "            kw[\"dropout\"] = 0.0\n"
    "            vk = kw.pop(varkw[0], {}) if varkw else {}\n"
    "            kw.update(vk)\n"
    "            return orig(**kw)\n"
    "        saved = drop_mod.p if drop_mod is not None else None\n"
    "        try:\n"
    "            if drop_mod is not None:\n"
    "                drop_mod.p = 0.0\n"
    "            return orig(*args, **kwargs)\n"
    "        finally:\n"
    "            if drop_mod is not None:\n"
    "                drop_mod.p = saved\n"
    "\n"
    "    def wrapper(*args, **kwargs):\n"
    "        if st[\"off\"]:\n"
    "            return orig(*args, **kwargs)\n"
    "        p, why = plan(args, kwargs)\n"
    "        if p is None:\n"
    "            _fallback(rec, why)\n"
    "            return orig(*args, **kwargs)\n"
    "        cls = repr([(tuple(t.shape), str(t.dtype)) for t in p[1:4]] +\n"
    "                   [None if p[4] is None else (tuple(p[4].shape), str(p[4].dtype))])\n"
    "        try:\n"
    "            if cls not in st[\"classes\"]:\n"
    "                with torch.no_grad():\n"
    "                    ref = reference(p, args, kwargs)\n"
    "                    got = run(p, 0.0)\n"
    "                res = _compare(torch, ref[0], got[0]) or \"verified (dropout 0)\"\n"
    "                st[\"classes\"][cls] = res\n"
    "                rec[\"verified\"][cls] = res\n"
    "                if not res.startswith(\"verified\"):\n"
    "                    st[\"off\"] = res\n"
    "                    rec[\"applied\"] = False\n"
    "                    rec[\"reason\"] = \"disabled on first use: \" + res\n"
    "                    _warn(key, \"disabled: \" + res)\n"
    "                    return orig(*args, **kwargs)\n"
    "            out = run(p, p[6])\n"
    "        except Exception as e:\n"
    "            st[\"off\"] = str(e)\n"
    "            rec[\"applied\"] = False\n"
    "            rec[\"reason\"] = \"disabled: %s: %s\" % (type(e).__name__, e)\n"
    "            _warn(key, \"disabled: %s: %s\" % (type(e).__name__, e))\n"
    "            return orig(*args, **kwargs)\n"
    "        _COUNTS[key] = _COUNTS.get(key, 0) + 1\n"
    "        return out\n"
    "\n"
    "    return wrapper, (\"replaced by transformers' sdpa_attention_forward "
    "(scaled_dot_product_attention; \"\n"
    "                     \"the attention weights come back as None)\")\n";

static cJSON *spec_json(const struct pkg_func *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "form", f->form);
	cJSON_AddStringToObject(o, "module", f->module);
	cJSON_AddStringToObject(o, "qualname", f->qualname);
	cJSON_AddStringToObject(o, "file", f->file ? f->file : "");
	cJSON_AddNumberToObject(o, "line", f->line);
	cJSON_AddNumberToObject(o, "invocations", f->invocations);
	const struct fgroup *g = f->g;
	if (!g)
		return o;
	cJSON_AddStringToObject(o, "name", g->name);
	cJSON *ins = cJSON_AddArrayToObject(o, "inputs");
	int shape = -1;
	for (int i = 0; i < g->ninputs; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", g->values[i].name);
		cJSON_AddStringToObject(x, "kind", f->kind[i]);
		cJSON_AddStringToObject(x, "dtype", fdtype_name(g->values[i].dtype));
		if (emit_bcast(g, i))
			cJSON_AddNumberToObject(x, "numel", (double)g->values[i].numel);
		else if (shape < 0)
			shape = i;
		cJSON_AddItemToArray(ins, x);
	}
	cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
	for (int w = 0; w < g->nwrites; w++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", g->values[g->writes[w].value].name);
		cJSON_AddStringToObject(x, "dtype", fdtype_name(g->writes[w].dtype));
		cJSON_AddItemToArray(outs, x);
	}
	cJSON_AddNumberToObject(o, "numel", (double)g->numel);
	cJSON_AddNumberToObject(o, "cols", g->kind == FG_ROW ? (double)g->cols : 0);
	cJSON_AddNumberToObject(o, "shape", shape < 0 ? 0 : shape);
	cJSON_AddNumberToObject(o, "ndrop", g->ndrop);
	cJSON *dp = cJSON_AddArrayToObject(o, "dropout_p");
	for (int k = 0; k < g->nops; k++)
		if (g->ops[k].drop >= 0)
			cJSON_AddItemToArray(dp, cJSON_CreateNumber(g->ops[k].p));
	return o;
}

void emit_pkg(struct strbuf *sb, const struct pkg_func *f, int n)
{
	strbuf_adds(sb,
	            "\"\"\"aicprof_fused: fused kernels installed into library code, generated "
	            "by aicprof fuse.\n\n"
	            "    import aicprof_fused\n    aicprof_fused.apply()\n\n"
	            "apply() replaces, at run time and in memory only (no library file is "
	            "edited), each function\nbelow by a wrapper that runs its fused form where "
	            "the call fits the traced one and the\noriginal otherwise; the first call of "
	            "each shape class runs both and compares them, and a\nmismatch disables "
	            "that replacement (one warning on stderr). applied() says what was\nreplaced "
	            "and why anything was not; counts() how often each fused form ran; "
	            "AICPROF_FUSED=0\nmakes apply() do nothing.\n\n");
	for (int i = 0; i < n; i++) {
		strbuf_addf(sb, "    %s.%s (%d invocations a step): ", f[i].module, f[i].qualname,
		            f[i].invocations);
		if (f[i].g) {
			strbuf_addf(sb, "group %s (", f[i].g->name);
			for (int k = 0; k < f[i].g->ninputs; k++)
				strbuf_addf(sb, "%s%s %s %s", k ? ", " : "", f[i].g->values[k].name,
				            f[i].kind[k], fdtype_name(f[i].g->values[k].dtype));
			strbuf_adds(sb, ")\n");
		} else {
			strbuf_adds(sb, "transformers' sdpa_attention_forward\n");
		}
	}
	if (!n)
		strbuf_adds(sb, "    (none: the analysis found no library function to replace)\n");
	strbuf_adds(sb, "\"\"\"\n");
	cJSON *arr = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, spec_json(&f[i]));
	char *js = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	strbuf_adds(sb, pkg_runtime);
	strbuf_adds(sb, "\n\n_FUNCS = json.loads(r\"\"\"");
	strbuf_adds(sb, js ? js : "[]");
	strbuf_adds(sb, "\"\"\")\n");
	free(js);
}
