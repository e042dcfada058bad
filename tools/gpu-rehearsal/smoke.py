# The smoke test's GPU op: chamferdist's CUDA kernel on the GPU, checked against a float64 torch reference.
import torch
from chamferdist import ChamferDistance

torch.manual_seed(0)
a = torch.rand(2, 500, 3, device="cuda")
b = torch.rand(2, 300, 3, device="cuda")
got = ChamferDistance()(a, b).item()
d = torch.cdist(a.double(), b.double()) ** 2
want = d.min(dim=2).values.sum(dim=1).mean().item()  # point_reduction="sum", batch_reduction="mean"
print(f"chamfer on {torch.cuda.get_device_name()}: {got:.6f} vs reference {want:.6f}")
assert abs(got - want) <= 1e-3 * max(1.0, abs(want)), (got, want)
