"""solder: a graph-level fusion compiler for neural-network inference.

    import solder
    model = solder.compile("resnet50.onnx", shapes={"input": (1, 3, 224, 224)})
    ctx = model.create_context()
    (logits,) = ctx.run({"input": x})      # x: a torch/CuPy CUDA tensor or NumPy

CUDA tensors (anything with ``__dlpack__`` on the GPU) are used in place, no
copies; NumPy arrays are copied. On the GPU backend outputs are torch
tensors when torch is installed (CuPy arrays otherwise) unless every input
was a host array, in which case they are NumPy arrays. The reference
backend (``backend="reference"``) runs on the CPU with NumPy arrays.
Errors are raised as :class:`SolderError` with solder's message.

This file normalizes arguments; the work is done by the native module
``solder._solder`` over solder's C++ API (include/solder/Solder.h).
"""

import os
import sys
from typing import NamedTuple, Tuple

from . import _solder
from ._solder import SolderError

__all__ = ["compile", "load_plan", "Model", "Context", "TensorSpec",
           "SolderError", "PRECISIONS"]

#: Precisions solder compiles: fp32 (TF32 off), tf32, and fp16/bf16 storage
#: with fp32 accumulation.
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
_PLANNED_PRECISIONS = ("int8",)

# solder's dtype names -> NumPy/torch names.
_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
           "f64": "float64", "i8": "int8", "u8": "uint8", "i16": "int16",
           "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "int64",
           "u64": "uint64", "bool": "bool"}

_DLPACK_CUDA = 2


class TensorSpec(NamedTuple):
    """A model input or output: its name, static shape and dtype name
    (NumPy spelling: 'float32', 'int64', ...)."""
    name: str
    shape: Tuple[int, ...]
    dtype: str


def _specs(described):
    return tuple(TensorSpec(n, tuple(d), _DTYPES.get(t, t))
                 for n, t, d in described)


def compile(model, *, shapes=None, precision="fp32", fusion=True,
            backend="cuda", arch=None, cache_dir=None, allow_tf32=False,
            disable_fusion=(), disable_passes=(), io_precision="model",
            layout="auto", fuse_attention=None, tune=False,
            gemm_kernels="auto", attention_kernels="auto",
            dependent_launch=False, defer_norms=False,
            conv_epilogues="auto"):
    """Compiles an ONNX model (a path or the model's bytes).

    shapes: {input name: shape tuple, or dim symbol name: size}, binding
      the model's symbolic dims (shapes are fixed at compile time).
    precision: 'fp32' (default, TF32 off), 'tf32', 'fp16' or 'bf16' (float
      tensors stored reduced, fp32 accumulation).
    io_precision: 'model' (the model's fp32 inputs and outputs keep their
      type) or 'compute' (they take the compute type).
    layout: 2-D convolutions in 'auto' (NHWC for fp16/bf16 on the GPU),
      'nchw' or 'nhwc'.
    fusion: False runs every op as its own step; disable_fusion lists
      fusion groups (ids) or ONNX node names not to fuse.
    fuse_attention: True runs every scaled dot-product attention as one
      Attention op (one flash-attention kernel on the GPU, as
      `--fuse-attention`); False none (`--no-fuse-attention`); None (the
      default) lets fp16/bf16 GPU plans fuse it where its kernel's grid
      fills the GPU.
    tune: as `solder compile --tune=MODE`; needs the GPU unless 'off'.
      'fast' chooses the cuDNN/cuBLASLt algorithms on this GPU now and
      records them, so save_plan writes a tuned plan; 'full' (or True)
      also times fp16/bf16 matmul groups as generated tensor-core GEMMs,
      attention groups as cuDNN's fused attention and convolution groups
      as cuDNN operation graphs, and keeps the faster; 'off' (or False,
      the default) leaves the algorithms to each load.
    gemm_kernels: who runs matmul groups, as `--gemm-kernels`: 'auto',
      'library', 'generated' or 'wgmma'.
    attention_kernels: who runs attention groups, as
      `--attention-kernels`: 'auto', 'generated' or 'cudnn'.
    conv_epilogues: how convolution groups run, as `--conv-epilogues`:
      'auto' (what tune='full' timed faster, else 'fused'), 'fused' (cuDNN's
      fused call plus a kernel for the rest of the chain) or 'graph' (one
      cuDNN operation graph per group, NHWC fp16/bf16).
    dependent_launch: `--dependent-launch`: generated kernels launch as
      programmatic dependents (sm_90+); tune='full' takes it where the
      whole plan measured faster.
    defer_norms: `--defer-norms` (experimental, fp16/bf16): LayerNorms
      read by matmuls and residual adds are deferred into them; correct,
      not faster so far.
    backend: 'cuda' (a GPU plan; compiling needs no GPU) or 'reference'
      (the CPU reference executor; no plan file).
    arch: the GPU architecture ('sm_90'); default: this machine's GPU.
    cache_dir: the compiled-kernel cache (default ~/.cache/solder).
    allow_tf32: let fp32 matmuls/convolutions use TF32 tensor cores.
    """
    if precision not in PRECISIONS:
        if precision in _PLANNED_PRECISIONS:
            raise SolderError(
                f"precision '{precision}' is not supported yet: solder "
                f"compiles {', '.join(PRECISIONS)} only")
        raise ValueError(f"unknown precision {precision!r} (expected one of "
                         f"{', '.join(PRECISIONS + _PLANNED_PRECISIONS)})")
    tune_mode = ("full" if tune else "off") if isinstance(tune, bool) \
        else tune
    if tune_mode not in ("off", "fast", "full"):
        raise ValueError(f"unknown tune {tune!r} (expected 'off', 'fast', "
                         "'full', False or True)")
    if io_precision not in ("model", "compute"):
        raise ValueError(f"unknown io_precision {io_precision!r} (expected "
                         "'model' or 'compute')")
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if not isinstance(model, (str, bytes, bytearray, memoryview)):
        raise TypeError("model must be a path or the ONNX model's bytes, "
                        f"not {type(model).__name__}")
    input_shapes, symbols = [], []
    for name, value in (shapes or {}).items():
        if isinstance(value, int):
            symbols.append((str(name), value))
        else:
            input_shapes.append((str(name), tuple(int(d) for d in value)))
    native = _solder.compile(
        model, input_shapes, symbols, str(backend), bool(fusion),
        [str(f) for f in disable_fusion], [str(p) for p in disable_passes],
        arch, None if cache_dir is None else os.fspath(cache_dir),
        bool(allow_tf32), str(precision), io_precision == "compute",
        str(layout), fuse_attention is True, fuse_attention is None,
        tune_mode, str(gemm_kernels), str(attention_kernels),
        bool(dependent_launch), bool(defer_norms), str(conv_epilogues))
    return Model(native)


def load_plan(path):
    """Reads a plan written by Model.save_plan or `solder compile`."""
    return Model(_solder.load_plan(os.fspath(path)))


class Model:
    """A compiled model: immutable, shareable by any number of contexts."""

    def __init__(self, native):
        self._native = native
        self.inputs = _specs(native.inputs())
        self.outputs = _specs(native.outputs())
        self.backend = native.backend()

    def save_plan(self, path):
        """Writes the plan file (cuda backend only)."""
        self._native.save_plan(os.fspath(path))

    @property
    def stats(self):
        """Steps, kernels, library calls, arena and weight bytes."""
        return self._native.stats()

    def create_context(self):
        """A new execution context (on the current GPU for the cuda
        backend: loads the model there on first use)."""
        return Context(self, self._native.create_context())

    def __repr__(self):
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}"
                        for t in self.inputs)
        outs = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}"
                         for t in self.outputs)
        return f"<solder.Model {self.backend} ({ins}) -> ({outs})>"


def _on_cuda(x):
    where = getattr(x, "__dlpack_device__", None)
    return where is not None and where()[0] == _DLPACK_CUDA


def _current_torch_stream(device):
    """torch's current cudaStream_t on device (its raw-stream query when
    this torch has it: a tenth of torch.cuda.current_stream's cost)."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device)
    return torch.cuda.current_stream(device).cuda_stream


def _streams(stream, device, tensors):
    """(the cudaStream_t a run goes on, the `stream` for __dlpack__).

    None: torch's current stream when a torch CUDA tensor is among the
    operands (torch already orders its work there: __dlpack__ gets -1, no
    synchronization), else the legacy default stream (0; DLPack's 1)."""
    if stream is None:
        torch = sys.modules.get("torch")
        if torch is not None and any(
                isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
            return torch.cuda.current_stream(device).cuda_stream, -1
        return 0, 1
    if isinstance(stream, int):
        handle = stream
    elif hasattr(stream, "__cuda_stream__"):  # the CUDA stream protocol
        handle = int(stream.__cuda_stream__()[1])
    elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        handle = int(stream.cuda_stream)
    elif hasattr(stream, "ptr"):  # cupy.cuda.Stream
        handle = int(stream.ptr)
    else:
        raise TypeError("stream must be an int (cudaStream_t), a torch or "
                        f"CuPy stream, or None; got {type(stream).__name__}")
    return handle, handle if handle else 1


class Context:
    """Runs a model; one thread at a time (runs of one context are
    serialized), any number of contexts concurrently."""

    def __init__(self, model, native):
        self.model = model
        self._native = native
        self.device = native.device()
        # The torch CUDA tensors of the latest run with given outputs on
        # torch's current stream, and their (data_ptr, shape, stride): the
        # same tensors again run without re-binding (see _run_bound).
        self._bound = None
        self._in_names = [s.name for s in model.inputs]

    def _ordered(self, values, specs, role):
        if isinstance(values, dict):
            names = [s.name for s in specs]
            unknown = [k for k in values if k not in names]
            if unknown:
                raise SolderError(
                    f"unknown {role} '{unknown[0]}' (the model's {role}s: "
                    f"{', '.join(names)})")
            missing = [n for n in names if n not in values]
            if missing:
                raise SolderError(f"missing {role} '{missing[0]}'")
            return [values[n] for n in names]
        if isinstance(values, (list, tuple)):
            if len(values) != len(specs):
                raise SolderError(f"the model takes {len(specs)} {role}s, "
                                  f"got {len(values)}")
            return list(values)
        if len(specs) == 1:
            return [values]
        raise SolderError(f"pass the {len(specs)} {role}s as a dict or a list")

    def _allocate(self, host):
        specs = self.model.outputs
        if host:
            import numpy
            for s in specs:
                if s.dtype == "bfloat16":
                    raise SolderError(f"output '{s.name}' is bfloat16, which "
                                      "NumPy lacks: pass outputs= (torch "
                                      "tensors)")
            return [numpy.empty(s.shape, dtype=s.dtype) for s in specs]
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            device = torch.device("cuda", self.device)
            return [torch.empty(s.shape, dtype=getattr(torch, s.dtype),
                                device=device) for s in specs]
        try:
            import cupy
        except ImportError:
            raise SolderError("outputs on the GPU are allocated with torch or "
                              "CuPy, and neither is installed: pass outputs= "
                              "(objects with __dlpack__)") from None
        with cupy.cuda.Device(self.device):
            return [cupy.empty(s.shape, dtype=s.dtype) for s in specs]

    def run(self, inputs, outputs=None, stream=None):
        """Runs the model and returns its outputs as a list, in the order of
        model.outputs.

        inputs: {name: array}, a list in model.inputs order, or one array
          for a one-input model. Arrays: NumPy (copied) or any object with
          __dlpack__ (CUDA tensors used in place).
        outputs: the same forms, written in place and returned; None
          allocates them (see the module docstring).
        stream: where the run is enqueued (cuda backend): an int
          cudaStream_t, a torch/CuPy stream, or None for torch's current
          stream when given torch CUDA tensors (else the default stream).
          The call returns once the run is enqueued, unless an output is
          host memory.
        """
        if stream is None and outputs is not None and self._bound:
            if self._run_bound(inputs, outputs):
                return outputs if isinstance(outputs, list) else \
                    list(outputs)
        ins = [_contiguous(x) for x in
               self._ordered(inputs, self.model.inputs, "input")]
        if outputs is None:
            host = self.device < 0 or not any(_on_cuda(x) for x in ins)
            outs = self._allocate(host)
        else:
            outs = self._ordered(outputs, self.model.outputs, "output")
        handle, dlpack_stream = 0, 1
        if self.device >= 0:
            handle, dlpack_stream = _streams(stream, self.device, ins + outs)
        self._native.run(ins, outs, handle, dlpack_stream)
        self._remember(ins, outs, stream is None and outputs is not None)
        return outs

    def _remember(self, ins, outs, eligible):
        """Keeps the tensors of this run for _run_bound when they are all
        torch CUDA tensors run on torch's current stream."""
        self._bound = None
        torch = sys.modules.get("torch")
        if not eligible or self.device < 0 or torch is None:
            return
        tensors = ins + outs
        if not all(type(x) is torch.Tensor and x.is_cuda for x in tensors):
            return
        self._bound = (ins, outs, [(x.data_ptr(), x.shape, x.stride())
                                   for x in tensors])

    def _run_bound(self, inputs, outputs):
        """The same tensor objects as the latest bound run, unchanged in
        place: run on them again without the DLPack exchange (torch's
        __dlpack__ and the re-binding cost more than the run's enqueue).
        False when anything differs; the caller then takes the full path."""
        ins, outs, snapshot = self._bound
        if isinstance(inputs, dict):
            if len(inputs) != len(ins):
                return False
            try:
                given = [inputs[n] for n in self._in_names]
            except KeyError:
                return False
        elif isinstance(inputs, (list, tuple)):
            given = inputs
        else:
            given = (inputs,)
        if not isinstance(outputs, (list, tuple)) or \
                len(given) != len(ins) or len(outputs) != len(outs):
            return False
        k = 0
        for new, old in zip(given, ins):
            if new is not old:
                return False
        for new, old in zip(outputs, outs):
            if new is not old:
                return False
        for x in ins:
            if (x.data_ptr(), x.shape, x.stride()) != snapshot[k]:
                return False
            k += 1
        for x in outs:
            if (x.data_ptr(), x.shape, x.stride()) != snapshot[k]:
                return False
            k += 1
        self._native.run_bound(_current_torch_stream(self.device))
        return True

    def time_native_runs(self, n=1000, stream=None):
        """Seconds per call of the C++ API's run() on the buffers of the
        latest run() (enqueue time only), for comparing with this module's
        own call overhead. cuda backend only."""
        return self._native.time_runs(int(n), _streams(
            stream, self.device, [])[0])


def _contiguous(x):
    """NumPy arrays made C-contiguous (a copy only when they are not)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(x, numpy.ndarray) and \
            not x.flags.c_contiguous:
        return numpy.ascontiguousarray(x)
    return x
