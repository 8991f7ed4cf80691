"""The solder Python module on the GPU with PyTorch (issue 13, acceptance 1).

Exports a torchvision ResNet-50 and a small BERT (transformers; random
weights, nothing downloaded), compiles both with solder from Python, runs
them on torch CUDA tensors and checks:
  - the outputs match PyTorch fp32 (TF32 off on both sides);
  - no host round trip: no memcpy at all in torch's profiler trace of the
    runs, torch allocates nothing when outputs are given, the outputs are
    the given tensors, and a change made to the input on the device shows
    in the next run's output;
  - the run follows torch's current stream (a side stream);
  - the Python call overhead per run against the C++ API's run() on the
    same context and buffers (target: under 20 us).
Exit 0 pass, 1 fail, 77 skip (no torch, no CUDA GPU).

    PYTHONPATH=BUILD/python python3 tests/python/test_gpu.py [--skip-bert]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

SKIP = 77
SOURCE_DIR = os.environ.get(
    "SOLDER_SOURCE_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OVERHEAD_TARGET_US = 20.0
FAILURES = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def rel_err(got, want):
    got, want = got.double(), want.double()
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


def host_copies_during(fn):
    """Runs fn under torch's profiler; the names of the host<->device copy
    events (a plan's own device-to-device copy steps are not counted)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU,
                             ProfilerActivity.CUDA]) as prof:
        fn()
    return [e.name for e in prof.events()
            if "HtoD" in e.name or "DtoH" in e.name]


def check_model(name, torch_model, example, input_names, shapes, tol):
    import torch
    import solder
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".onnx")
        torch.onnx.export(torch_model, example, path, input_names=input_names,
                          output_names=["out"], opset_version=17,
                          dynamo=False)
        t = time.perf_counter()
        model = solder.compile(path, shapes=shapes)
        print(f"{name}: compiled in {time.perf_counter() - t:.2f} s, "
              f"{model.stats['steps']} steps", flush=True)
    ctx = model.create_context()
    inputs = {n: x.cuda() for n, x in zip(input_names, example)}
    with torch.no_grad():
        want = torch_model.cuda()(*inputs.values())
    (got,) = ctx.run(inputs)
    torch.cuda.synchronize()
    check(got.is_cuda and got.shape == want.shape,
          f"{name}: output is a CUDA tensor of shape {tuple(want.shape)}")
    err = rel_err(got, want)
    check(err <= tol, f"{name}: max rel err vs PyTorch {err:.3g} <= {tol}")

    # Zero copy: given outputs are written in place, nothing is allocated
    # and nothing is copied.
    out = torch.empty_like(got)
    ptr = out.data_ptr()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()

    def runs():
        for _ in range(3):
            ctx.run(inputs, outputs=[out])
        torch.cuda.synchronize()

    copies = host_copies_during(runs)
    check(not copies, f"{name}: no host<->device copy during runs on CUDA "
          f"tensors (saw {copies[:3]})")
    check(torch.cuda.memory_allocated() == before and out.data_ptr() == ptr,
          f"{name}: runs with given outputs allocate nothing in torch")
    check(torch.equal(out, got), f"{name}: the given output holds the result")
    return model, ctx, inputs, out


def check_live_input(ctx, inputs, out):
    """A change to the input made on the device shows in the next run."""
    import torch
    x = next(iter(inputs.values()))
    first = out.clone()
    x.mul_(-1.0)  # on the device, on torch's current stream
    ctx.run(inputs, outputs=[out])
    torch.cuda.synchronize()
    check(not torch.equal(first, out),
          "resnet50: a device-side change to the bound input changes the output")
    x.mul_(-1.0)


def check_rebinding(ctx, inputs, out):
    """Repeated runs on the same tensors skip re-binding; another output
    tensor, or an input changed in place to another storage, is bound."""
    import torch
    ctx.run(inputs, outputs=[out])
    ctx.run(inputs, outputs=[out])  # the same tensors: the bound fast path
    torch.cuda.synchronize()
    ref = out.clone()
    other = torch.zeros_like(out)
    ctx.run(inputs, outputs=[other])
    torch.cuda.synchronize()
    check(torch.equal(other, ref), "a new output tensor is written (bound)")
    x = next(iter(inputs.values()))
    saved = x.clone()
    x.set_(torch.neg(saved))  # same object, new storage
    ctx.run(inputs, outputs=[out])
    torch.cuda.synchronize()
    check(not torch.equal(out, ref),
          "an input given new storage in place is read from there")
    x.set_(saved)
    ctx.run(inputs, outputs=[out])
    torch.cuda.synchronize()
    check(torch.equal(out, ref), "and back: the original storage again")


def check_side_stream(ctx, inputs, out):
    import torch
    side = torch.cuda.Stream()
    ctx.run(inputs, outputs=[out])  # the reference: torch's default stream
    torch.cuda.synchronize()
    ref = out.clone()
    out.zero_()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        ctx.run(inputs, outputs=[out])  # stream=None: torch's current stream
    side.synchronize()
    check(torch.equal(ref, out), "a run on torch's current (side) stream")


def measure_overhead():
    """Python ctx.run vs the C++ run() on one context, buffers and stream."""
    import torch
    import solder
    model = solder.compile(
        os.path.join(SOURCE_DIR, "examples", "models", "tiny_cnn.onnx"),
        shapes={"N": 1})
    ctx = model.create_context()
    x = torch.randn(*model.inputs[0].shape, device="cuda")
    out = torch.empty(*model.outputs[0].shape, device="cuda")
    stream = torch.cuda.Stream()
    inputs = {"input": x}
    with torch.cuda.stream(stream):
        for _ in range(20):
            ctx.run(inputs, outputs=[out])  # first runs capture the graph
    stream.synchronize()
    n, py, cpp = 200, [], []
    for _ in range(7):
        with torch.cuda.stream(stream):
            t = time.perf_counter()
            for _ in range(n):
                ctx.run(inputs, outputs=[out])
            py.append((time.perf_counter() - t) / n)
        stream.synchronize()
        cpp.append(ctx.time_native_runs(n, stream))
        stream.synchronize()
    py_us, cpp_us = statistics.median(py) * 1e6, statistics.median(cpp) * 1e6
    print(f"per run (enqueue, median of 7 x {n}): Python ctx.run {py_us:.1f} "
          f"us, C++ run() {cpp_us:.1f} us, overhead {py_us - cpp_us:.1f} us",
          flush=True)
    # For the record, not a check: new output tensors on every call (the
    # default outputs=None) move the bound address, which makes the context
    # re-capture its CUDA graph when the address differs from the last run.
    fresh = []
    for _ in range(3):
        with torch.cuda.stream(stream):
            t = time.perf_counter()
            for _ in range(50):
                ctx.run(inputs)
            fresh.append((time.perf_counter() - t) / 50)
        stream.synchronize()
    print(f"per run with outputs=None (a new output tensor each call): "
          f"{statistics.median(fresh) * 1e6:.1f} us", flush=True)
    check(py_us - cpp_us < OVERHEAD_TARGET_US,
          f"Python call overhead {py_us - cpp_us:.1f} us < "
          f"{OVERHEAD_TARGET_US:g} us")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-bert", action="store_true")
    args = ap.parse_args()
    # solder first: its protobuf and ONNX libraries bind at import (Python
    # loads extensions with RTLD_NOW) before torch puts its libraries in the
    # global symbol scope.
    import solder
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed")
        return SKIP
    if not torch.cuda.is_available():
        print("SKIP: no CUDA GPU")
        return SKIP
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)

    import torchvision
    resnet = torchvision.models.resnet50(weights=None).eval()
    model, ctx, inputs, out = check_model(
        "resnet50", resnet, (torch.randn(1, 3, 224, 224),), ["input"],
        {"input": (1, 3, 224, 224)}, tol=1e-3)
    check_live_input(ctx, inputs, out)
    check_rebinding(ctx, inputs, out)
    check_side_stream(ctx, inputs, out)

    if args.skip_bert:
        print("SKIP bert (--skip-bert)")
    else:
        try:
            import transformers
        except ImportError:
            transformers = None
            print("SKIP bert: transformers is not installed")
        if transformers is not None:
            cfg = transformers.BertConfig(
                vocab_size=1000, hidden_size=256, num_hidden_layers=4,
                num_attention_heads=4, intermediate_size=1024)
            cfg._attn_implementation = "eager"
            bert = transformers.BertModel(cfg).eval()

            class Wrapped(torch.nn.Module):
                def __init__(self, m):
                    super().__init__()
                    self.m = m

                def forward(self, input_ids, attention_mask):
                    return self.m(input_ids=input_ids,
                                  attention_mask=attention_mask
                                  ).last_hidden_state

            ids = torch.randint(0, 1000, (2, 128))
            mask = torch.ones(2, 128, dtype=torch.int64)
            mask[1, 100:] = 0
            check_model("bert", Wrapped(bert).eval(), (ids, mask),
                        ["input_ids", "attention_mask"],
                        {"input_ids": (2, 128), "attention_mask": (2, 128)},
                        tol=1e-3)

    measure_overhead()
    # Errors surface as SolderError, also on the GPU path.
    try:
        ctx.run({"input": torch.zeros(2, 3, 224, 224, device="cuda")})
        check(False, "a wrong-shaped CUDA tensor raises SolderError")
    except solder.SolderError as e:
        check("expected f32[1,3,224,224]" in str(e),
              f"a wrong-shaped CUDA tensor raises SolderError ({e})")
    print(f"{len(FAILURES)} failed" if FAILURES else "all GPU Python checks "
          "passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
