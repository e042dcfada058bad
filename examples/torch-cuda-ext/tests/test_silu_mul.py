"""GPU tests: the kernel against torch's own ops on the same GPU.

Everything skips without CUDA (the extension links libcudart and holds only sm_90a code).
Run on an H100 after installing the wheel: `pytest -m gpu tests/`.
"""

import pytest

torch = pytest.importorskip("torch")

needs_h100 = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
    reason="needs an sm_90 GPU: the wheel carries sm_90a code only",
)
pytestmark = [pytest.mark.gpu, needs_h100]


def reference(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
@pytest.mark.parametrize("shape", [(1, 2), (3, 7, 256), (4096, 2 * 11008)])
def test_matches_torch_on_the_gpu(dtype, tol, shape):
    import torch_cuda_ext

    x = torch.randn(shape, device="cuda", dtype=dtype, generator=torch.Generator("cuda").manual_seed(0))
    got = torch_cuda_ext.silu_mul(x)
    assert got.shape == (*shape[:-1], shape[-1] // 2) and got.dtype == dtype and got.is_cuda
    torch.testing.assert_close(got.float(), reference(x), rtol=tol, atol=tol)


def test_non_contiguous_input():
    import torch_cuda_ext

    x = torch.randn(64, 512, device="cuda").t()  # (512, 64), strided
    torch.testing.assert_close(torch_cuda_ext.silu_mul(x), reference(x), rtol=1e-5, atol=1e-5)


def test_refuses_an_odd_last_dimension():
    import torch_cuda_ext

    with pytest.raises(RuntimeError, match="must be even"):
        torch_cuda_ext.silu_mul(torch.randn(4, 5, device="cuda"))


def test_cpu_tensor_is_refused():
    import torch_cuda_ext

    with pytest.raises(NotImplementedError):  # no CPU kernel is registered for the op
        torch_cuda_ext.silu_mul(torch.randn(4, 8))
