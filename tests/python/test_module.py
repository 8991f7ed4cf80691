"""The solder Python module without a GPU (CI): compile the bundled model,
run it on the reference backend with NumPy inputs against onnxruntime, and
check that bad input raises SolderError with solder's message. The cuda
backend is compiled (NVRTC needs no GPU) and its plan saved and loaded;
creating a context either fails with "no CUDA device" or, on a GPU machine,
runs and matches the reference.

Run by ctest (python_module) with PYTHONPATH=BUILD/python; exit 77 = skip.
"""
import os
import sys
import tempfile
import unittest

import numpy as np

import solder

SOURCE_DIR = os.environ.get(
    "SOLDER_SOURCE_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TINY = os.path.join(SOURCE_DIR, "examples", "models", "tiny_cnn.onnx")
SHAPES = {"input": (2, 3, 32, 32)}


def random_input(seed=1):
    return np.random.default_rng(seed).standard_normal(
        SHAPES["input"]).astype(np.float32)


class DLPackOnly:
    """A NumPy array seen only through DLPack, as from torch or CuPy; device
    overrides what __dlpack_device__ says (the data stays on the host)."""

    def __init__(self, array, device=None):
        self.array, self.device = array, device

    def __dlpack_device__(self):
        return self.device or self.array.__dlpack_device__()

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()


class ReferenceBackend(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = solder.compile(TINY, shapes=SHAPES, backend="reference")

    def test_describes_inputs_and_outputs(self):
        m = self.model
        self.assertEqual(m.backend, "reference")
        self.assertEqual(m.inputs,
                         (solder.TensorSpec("input", (2, 3, 32, 32),
                                            "float32"),))
        self.assertEqual([o.name for o in m.outputs], ["probs"])
        self.assertEqual(m.outputs[0].dtype, "float32")
        self.assertEqual(m.outputs[0].shape[0], 2)

    def test_matches_onnxruntime(self):
        try:
            import onnxruntime
        except ImportError:
            self.skipTest("onnxruntime is not installed")
        x = random_input()
        (probs,) = self.model.create_context().run({"input": x})
        self.assertIsInstance(probs, np.ndarray)
        sess = onnxruntime.InferenceSession(
            TINY, providers=["CPUExecutionProvider"])
        (want,) = sess.run(None, {"input": x})
        self.assertEqual(probs.shape, want.shape)
        np.testing.assert_allclose(probs, want, rtol=1e-4, atol=1e-5)

    def test_reduced_precision_on_the_reference_backend(self):
        # fp16/bf16 plans keep the model's fp32 inputs and outputs and stay
        # within the precision's bound of the fp32 run.
        x = random_input(2)
        (want,) = self.model.create_context().run(x)
        for precision, tol in (("fp16", 1e-2), ("bf16", 3e-2)):
            m = solder.compile(TINY, shapes=SHAPES, backend="reference",
                               precision=precision)
            self.assertEqual(m.inputs[0].dtype, self.model.inputs[0].dtype)
            (got,) = m.create_context().run(x)
            err = np.abs(got - want).max() / np.abs(want).max()
            self.assertLessEqual(err, tol, precision)

    def test_fuse_attention_on_the_reference_backend(self):
        # The Attention op gives the unfused graph's outputs.
        block = os.path.join(SOURCE_DIR, "tests", "data",
                             "attention_block.onnx")
        rng = np.random.default_rng(3)
        feed = {"qkv": rng.standard_normal((2, 6, 72)).astype(np.float32),
                "mask": rng.standard_normal((2, 1, 1, 6)).astype(np.float32)}
        outs = []
        for fuse in (False, True):
            m = solder.compile(block, shapes={"B": 2}, backend="reference",
                               fuse_attention=fuse)
            outs.append(m.create_context().run(feed)[0])
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)

    def test_attention_kernels_choose_the_plan_step(self):
        # attention_kernels='cudnn' plans the f16 attention block as one
        # cuDNN call (a library call, no kernel); 'generated' as one kernel;
        # an unknown name is refused with solder's message.
        block = os.path.join(SOURCE_DIR, "tests", "data",
                             "attention_block.onnx")
        calls = {}
        for kernels in ("generated", "cudnn"):
            m = solder.compile(block, shapes={"B": 2}, arch="sm_90",
                               precision="fp16", io_precision="compute",
                               fuse_attention=True,
                               attention_kernels=kernels)
            calls[kernels] = (m.stats["steps"], m.stats["library_calls"])
        self.assertEqual(calls["generated"], (1, 0))
        self.assertEqual(calls["cudnn"], (1, 1))
        with self.assertRaisesRegex(solder.SolderError,
                                    "unknown attention_kernels 'flash'"):
            solder.compile(block, shapes={"B": 2}, arch="sm_90",
                           attention_kernels="flash")

    def test_conv_epilogues_choose_the_plan_step(self):
        # conv_epilogues='graph' plans each of conv_chains.onnx's six
        # convolution groups as one cuDNN graph (no rest kernel); 'fused'
        # keeps cuDNN's fused call and a kernel for each chain it cannot
        # take; an unknown name is refused with solder's message.
        chains = os.path.join(SOURCE_DIR, "tests", "data", "conv_chains.onnx")
        steps = {}
        for how in ("fused", "graph"):
            m = solder.compile(chains, arch="sm_90", precision="fp16",
                               conv_epilogues=how)
            steps[how] = (m.stats["steps"], m.stats["library_calls"])
        self.assertEqual(steps["graph"][1], steps["fused"][1])
        self.assertLess(steps["graph"][0], steps["fused"][0])
        with self.assertRaisesRegex(solder.SolderError,
                                    "unknown conv_epilogues 'winograd'"):
            solder.compile(chains, arch="sm_90", conv_epilogues="winograd")

    def test_defer_norms_removes_the_layernorm_steps(self):
        # defer_norms=True (`--defer-norms`): BERT-mini's three LayerNorms
        # read by a matmul and a residual add are computed by the generated
        # GEMMs that read their input (16 steps -> 13); the flag reaches
        # the pipeline through the module. Compiling needs no GPU.
        shared = os.environ.get("SOLDER_SHARED_DIR") or os.path.join(
            SOURCE_DIR, "..", "shared")
        path = os.path.join(shared, "models", "bert_mini_opset14.onnx")
        if not os.path.exists(path):
            self.skipTest("../shared/models is not here")
        steps = {}
        for defer in (False, True):
            m = solder.compile(path, shapes={"B": 1, "S": 128}, arch="sm_90",
                               precision="fp16", gemm_kernels="generated",
                               dependent_launch=True,
                               disable_passes=["norm-epilogue-fusion"],
                               defer_norms=defer)
            steps[defer] = m.stats["steps"]
        self.assertEqual(steps, {False: 16, True: 13})

    def test_input_forms_and_given_outputs(self):
        ctx = self.model.create_context()
        x = random_input(2)
        (a,) = ctx.run({"input": x})
        (b,) = ctx.run([x])
        (c,) = ctx.run(x)
        out = np.full(self.model.outputs[0].shape, np.nan, np.float32)
        (d,) = ctx.run(x, outputs=[out])
        self.assertIs(d, out)
        # A strided view is made contiguous, a read-only array is accepted.
        wide = np.zeros((2, 3, 32, 64), np.float32)
        wide[..., ::2] = x
        ro = x.copy()
        ro.flags.writeable = False
        (e,) = ctx.run(wide[..., ::2])
        (f,) = ctx.run(ro)
        for r in (b, c, d, e, f):
            np.testing.assert_array_equal(a, r)

    def test_compiles_from_bytes(self):
        with open(TINY, "rb") as f:
            data = f.read()
        m = solder.compile(data, shapes={"N": 2}, backend="reference")
        x = random_input(3)
        (a,) = m.create_context().run(x)
        (b,) = self.model.create_context().run(x)
        np.testing.assert_array_equal(a, b)

    def test_bad_inputs_raise_solder_errors(self):
        ctx = self.model.create_context()
        x = random_input()
        cases = [
            ({"inpt": x}, "unknown input 'inpt'"),
            ({}, "missing input 'input'"),
            ([x, x], "takes 1 inputs, got 2"),
            (x[:1], "input 'input': expected f32[2,3,32,32], got f32[1,3,32,32]"),
            (x.astype(np.float64), "expected f32[2,3,32,32], got f64[2,3,32,32]"),
            ("text", "input 'input': expected a NumPy array"),
        ]
        for inputs, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(solder.SolderError) as cm:
                    ctx.run(inputs)
                self.assertIn(message, str(cm.exception))
        ro_out = np.zeros(self.model.outputs[0].shape, np.float32)
        ro_out.flags.writeable = False
        with self.assertRaisesRegex(solder.SolderError, "output 'probs'"):
            ctx.run(x, outputs=[ro_out])
        # The context still works after the errors.
        ctx.run(x)

    def test_dlpack_producers(self):
        """Objects offering only DLPack (like torch CPU tensors) are read
        through the capsule: layout, dtype, shape and strides checked."""
        ctx = self.model.create_context()
        x = random_input(5)
        (want,) = ctx.run(x)
        (got,) = ctx.run({"input": DLPackOnly(x)})
        np.testing.assert_array_equal(got, want)
        out = np.zeros(self.model.outputs[0].shape, np.float32)
        ctx.run(DLPackOnly(x), outputs=[DLPackOnly(out)])
        np.testing.assert_array_equal(out, want)
        wide = np.zeros((2, 3, 32, 64), np.float32)
        cases = [
            (DLPackOnly(x[:1]), "expected f32[2,3,32,32], got f32[1,3,32,32]"),
            (DLPackOnly(x.astype(np.int32)), "got i32[2,3,32,32]"),
            (DLPackOnly(wide[..., ::2]), "not contiguous"),
            (DLPackOnly(x, device=(2, 0)), "is on cuda:0; the reference "
                                           "backend runs on the CPU"),
            (DLPackOnly(x, device=(8, 0)), "DLPack device type 8"),
        ]
        for arg, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(solder.SolderError) as cm:
                    ctx.run(arg)
                self.assertIn(message, str(cm.exception))

    def test_threads_run_contexts_concurrently(self):
        """The GIL is released while running: contexts on other threads
        run at the same time and get the same results."""
        import threading
        x = random_input(6)
        (want,) = self.model.create_context().run(x)
        results, errors = [], []

        def work():
            try:
                ctx = self.model.create_context()
                for _ in range(3):
                    results.append(ctx.run(x)[0])
            except Exception as e:  # reported below, not lost in a thread
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 9)
        for r in results:
            np.testing.assert_array_equal(r, want)

    def test_no_plan_for_the_reference_backend(self):
        with self.assertRaisesRegex(solder.SolderError, "no plan"):
            self.model.save_plan(os.path.join(tempfile.gettempdir(), "x.plan"))


class BadModels(unittest.TestCase):
    def test_missing_file(self):
        with self.assertRaises(solder.SolderError) as cm:
            solder.compile("/nonexistent/model.onnx", backend="reference")
        self.assertIn("/nonexistent/model.onnx", str(cm.exception))

    def test_truncated_model(self):
        with open(TINY, "rb") as f:
            data = f.read()
        with self.assertRaises(solder.SolderError):
            solder.compile(data[: len(data) // 2], shapes=SHAPES,
                           backend="reference")

    def test_unbound_symbolic_dim(self):
        with self.assertRaisesRegex(solder.SolderError, "input 'input'"):
            solder.compile(TINY, backend="reference")

    def test_unknown_shape_name(self):
        with self.assertRaisesRegex(solder.SolderError, "'image'"):
            solder.compile(TINY, shapes={"image": (1, 3, 32, 32)},
                           backend="reference")

    def test_options(self):
        with self.assertRaisesRegex(solder.SolderError,
                                    "precision 'int8' is not supported yet"):
            solder.compile(TINY, shapes=SHAPES, precision="int8")
        with self.assertRaises(ValueError):
            solder.compile(TINY, shapes=SHAPES, io_precision="half")
        with self.assertRaises(ValueError):
            solder.compile(TINY, shapes=SHAPES, precision="fp8x")
        with self.assertRaisesRegex(solder.SolderError, "unknown backend"):
            solder.compile(TINY, shapes=SHAPES, backend="tpu")
        with self.assertRaises(TypeError):
            solder.compile(42)
        with self.assertRaisesRegex(ValueError, "unknown tune 'slow'"):
            solder.compile(TINY, shapes=SHAPES, tune="slow")


class CudaBackend(unittest.TestCase):
    def test_tune_chooses_algorithms_on_the_gpu(self):
        # tune='fast', 'full' or True load the plan onto this GPU: without
        # one they raise solder's "no CUDA device"; with one the saved plan
        # is tuned. Its twin: the same compile with tune off needs no GPU.
        solder.compile(TINY, shapes=SHAPES, arch="sm_90")
        solder.compile(TINY, shapes=SHAPES, arch="sm_90", tune="off")
        for mode in ("fast", "full", True):
            try:
                model = solder.compile(TINY, shapes=SHAPES, tune=mode)
            except solder.SolderError as e:
                self.assertIn("no CUDA device", str(e))
                continue
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "tuned.plan")
                model.save_plan(path)
                self.assertEqual(solder.load_plan(path).outputs,
                                 model.outputs)

    def test_compile_save_load_and_context(self):
        model = solder.compile(TINY, shapes=SHAPES, arch="sm_90")
        self.assertEqual(model.backend, "cuda")
        self.assertGreater(model.stats["steps"], 0)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny.plan")
            model.save_plan(path)
            loaded = solder.load_plan(path)
        self.assertEqual(loaded.inputs, model.inputs)
        self.assertEqual(loaded.outputs, model.outputs)
        try:
            ctx = loaded.create_context()
        except solder.SolderError as e:
            self.assertIn("no CUDA device", str(e))
            return
        x = random_input(4)
        (gpu,) = ctx.run({"input": x})  # NumPy in: NumPy out
        self.assertIsInstance(gpu, np.ndarray)
        ref = solder.compile(TINY, shapes=SHAPES, backend="reference")
        (want,) = ref.create_context().run(x)
        np.testing.assert_allclose(gpu, want, rtol=1e-4, atol=1e-5)

    def test_load_plan_errors(self):
        with self.assertRaises(solder.SolderError):
            solder.load_plan("/nonexistent/model.plan")
        with self.assertRaises(solder.SolderError):
            solder.load_plan(TINY)  # ONNX, not a plan


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
