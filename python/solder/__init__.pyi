# Type stubs of the solder Python module (python/solder/__init__.py).
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

PRECISIONS: Tuple[str, ...]

class SolderError(RuntimeError):
    """An error reported by solder (bad model, bad input, no GPU...)."""

class TensorSpec(NamedTuple):
    name: str
    shape: Tuple[int, ...]
    dtype: str

# Anything with the buffer protocol (NumPy arrays) or __dlpack__ (torch,
# CuPy, JAX arrays).
Array = Any
Arrays = Union[Dict[str, Array], Sequence[Array], Array]
Stream = Union[int, Any, None]

def compile(
    model: Union[str, os.PathLike, bytes, bytearray, memoryview],
    *,
    shapes: Optional[Dict[str, Union[int, Sequence[int]]]] = ...,
    precision: str = ...,
    fusion: bool = ...,
    backend: str = ...,
    arch: Optional[str] = ...,
    cache_dir: Optional[Union[str, os.PathLike]] = ...,
    allow_tf32: bool = ...,
    disable_fusion: Sequence[Union[int, str]] = ...,
    disable_passes: Sequence[str] = ...,
    io_precision: str = ...,
    layout: str = ...,
    fuse_attention: Optional[bool] = ...,
    tune: Union[bool, str] = ...,
    gemm_kernels: str = ...,
    attention_kernels: str = ...,
    dependent_launch: bool = ...,
    defer_norms: bool = ...,
    conv_epilogues: str = ...,
) -> Model: ...
def load_plan(path: Union[str, os.PathLike]) -> Model: ...

class Model:
    inputs: Tuple[TensorSpec, ...]
    outputs: Tuple[TensorSpec, ...]
    backend: str
    @property
    def stats(self) -> Dict[str, int]: ...
    def save_plan(self, path: Union[str, os.PathLike]) -> None: ...
    def create_context(self) -> Context: ...

class Context:
    model: Model
    device: int
    def run(
        self, inputs: Arrays, outputs: Optional[Arrays] = ..., stream: Stream = ...
    ) -> List[Array]: ...
    def time_native_runs(self, n: int = ..., stream: Stream = ...) -> float: ...
