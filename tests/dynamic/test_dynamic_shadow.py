"""The device shadow of the host-sync sanitizer, in-process on the CPU: which tensors a GPU run of
the same code would have on the device, so that a sync counts only on those.

Cases are written from the rule (ptlint/dynamic/syncs.py): every source of device tensors, every
host-only source. Each case is a function in this file; a line it marks `# sync` must be
reported, and no other line of it. `# sync: 2` marks a line with two syncs."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, RandomSampler, TensorDataset, WeightedRandomSampler

from ptlint.dynamic.paths import is_user_file, torch_dirs
from ptlint.dynamic.syncs import SyncCounter, sanitizing

HERE = Path(__file__).resolve()
SOURCE = HERE.read_text().splitlines()
CPU = torch.device("cpu")
HOST_NAME = "cpu"


def marked(case) -> dict[int, int]:
    """{line: syncs} of the lines a case function marks `# sync` (`# sync: N` for N)."""
    code = case.__code__
    out = {}
    number = code.co_firstlineno
    for number in range(code.co_firstlineno, code.co_firstlineno + 200):
        text = SOURCE[number - 1]
        if number > code.co_firstlineno and text and not text.startswith((" ", "\t")):
            break
        found = re.search(r"# sync(?:: (\d+))?\b", text)
        if found and not text.lstrip().startswith("#"):
            out[number] = int(found.group(1) or 1)
    return out


def run(case, assume_device: bool) -> tuple[dict[int, int], list[dict]]:
    """Run `case()` under the sanitizer on a shadowed CPU run; {line: count} of its syncs in this file.
    The shadow stands in for a GPU on a machine without one: on a GPU machine the cases still see
    none (`device_from_cuda()` is the CPU there too), as they would in CI."""
    counter = SyncCounter(lambda path: is_user_file(path, torch_dirs()))
    with mock.patch.object(torch.cuda, "is_available", return_value=False), \
            sanitizing(counter, hypothetical=True, assume_device=assume_device):
        case()
    events = counter.take()
    found: dict[int, int] = {}
    for event in events:
        if Path(event["file"]).resolve() == HERE:
            found[event["line"]] = found.get(event["line"], 0) + event["count"]
    return found, events


def explain_policy(case) -> dict[int, int]:
    return run(case, assume_device=False)[0]


def guard_policy(case) -> dict[int, int]:
    return run(case, assume_device=True)[0]


# -- explain's policy: the program's placements ------------------------------------------------

class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.register_buffer("scale", torch.ones(3))

    def forward(self, x):
        return self.fc(x) * self.scale


def device_from_cuda():
    return "cuda" if torch.cuda.is_available() else "cpu"


def case_cuda_method():
    x = torch.randn(3).cuda()
    x.sum().item()  # sync
    torch.randn(3).sum().item()  # made without a device: on the host in a GPU run too
    torch.zeros(2, device="cuda").sum().item()  # sync
    torch.ones(2).to("cuda").sum().item()  # sync
    torch.ones(2).to(0).sum().item()  # sync: a CUDA ordinal
    torch.ones(2, device=0).sum().item()  # sync


def case_to_a_device_variable():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(3).to(device)
    x.max().item()  # sync
    y = torch.randn(3).to(device=device, dtype=torch.float64)
    y.max().item()  # sync


def case_device_argument():
    device = device_from_cuda()
    x = torch.ones(3, device=device)
    if x.sum() > 0:  # sync
        pass
    torch.zeros(2, device=torch.device(device)).tolist()  # sync


def case_module_to():
    device = device_from_cuda()
    model = Small().to(device)
    model.fc.weight.sum().item()  # sync
    model.scale.sum().item()  # sync
    bare = Small()
    bare.fc.weight.sum().item()  # never moved: on the host


def case_module_cuda():
    model = Small().cuda()
    model.fc.bias.sum().item()  # sync
    model.scale.max().item()  # sync


def case_computed_from_device():
    device = device_from_cuda()
    model = Small().to(device)
    x = torch.randn(4, 3).to(device)
    host = torch.tensor(2.0)
    out = model(x) * host  # a device tensor times a host scalar: on the device
    loss = out.pow(2).mean()
    loss.backward()
    print(f"{loss:.3f}")  # sync
    total = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # torch moves the norms among its devices
    if total > 10:  # sync
        pass
    grad_max = max(p.grad.abs().max() for p in model.parameters())  # sync (max() compares the two)
    return grad_max


def case_following_other_tensors():
    device = device_from_cuda()
    on_device = torch.ones(3, device=device)
    host = torch.ones(3)
    torch.zeros(3, device=on_device.device).sum().item()  # sync
    torch.zeros(3, device=host.device).sum().item()  # host.device is the CPU
    torch.ones(2).to(on_device).sum().item()  # sync
    torch.ones(2).to(host).sum().item()


def move(tensor, device):
    return tensor.to(device)


def move_keyword(tensor, *, device):
    return tensor.to(device)


class Mover:
    def __init__(self, device):
        self.device = device

    def move(self, tensor, device):
        return torch.zeros(2, device=device) + tensor


def case_device_chosen_by_the_caller():
    device = device_from_cuda()
    move(torch.ones(2), device).sum().item()  # sync
    move(torch.ones(2), "cpu").sum().item()
    move(torch.ones(2), device=CPU).sum().item()
    this_module = sys.modules[__name__]
    this_module.move(torch.ones(2), "cpu").sum().item()  # a function called through its module
    mover = Mover(device)
    mover.move(torch.ones(2, device=device), "cpu").sum().item()  # sync
    mover.move(torch.ones(2), "cpu").sum().item()
    mover.move(torch.ones(2), device).sum().item()  # sync
    move_keyword(torch.ones(2), device="cpu").sum().item()
    move_keyword(torch.ones(2), device=device).sum().item()  # sync


def moved_in_a_comprehension(batch, device):
    return [t.to(device) for t in batch]


def moved_in_a_generator(batch, device):
    return tuple(t.to(device) for t in batch)


def case_a_device_passed_into_a_comprehension():
    """A helper that moves a batch in a comprehension: the comprehension runs as a frame of its
    own (list, set and dict comprehensions before Python 3.12, generator expressions always), in
    which the device is a free name of the helper, so its caller spells it."""
    device = device_from_cuda()
    (a,) = moved_in_a_comprehension([torch.ones(2)], "cpu")
    a.sum().item()
    (b,) = moved_in_a_comprehension([torch.ones(2)], CPU)
    b.sum().item()
    (c,) = moved_in_a_generator([torch.ones(2)], torch.device("cpu"))
    c.sum().item()
    (d,) = moved_in_a_comprehension([torch.ones(2)], device)
    d.sum().item()  # sync
    (e,) = moved_in_a_generator([torch.ones(2)], device=device)
    e.sum().item()  # sync
    host = HOST_NAME
    (f,) = [t.to(host) for t in [torch.ones(2)]]
    f.sum().item()
    (g,) = {k: t.to(device) for k, t in {"g": torch.ones(2)}.items()}.values()
    g.sum().item()  # sync


def case_spelled_as_the_cpu():
    from torch import device as make_device  # noqa: F401 - the spelling `device("cpu")` below
    from torch import device

    torch.ones(3, device="cpu").sum().item()
    torch.ones(3, device="cpu:0").sum().item()
    torch.ones(3, device=torch.device("cpu")).sum().item()
    torch.ones(3, device=torch.device(type="cpu")).sum().item()
    torch.ones(3, device=device("cpu")).sum().item()
    torch.ones(3, device=CPU).sum().item()
    torch.ones(3, device=HOST_NAME).sum().item()
    flag = len(SOURCE) > 0
    either = "cpu" if flag else torch.device("cpu")
    torch.ones(3, device=either).sum().item()
    alias = HOST_NAME
    torch.ones(3, device=alias).sum().item()
    device = device_from_cuda()
    unknown = [device][0]
    torch.ones(3, device=unknown).sum().item()  # sync: spelled some other way: the device
    cpu = torch.device("cpu")
    torch.ones(3).to(device).to(cpu).sum().item()  # sync: the move itself reads the device
    x = torch.ones(3, device=device)
    copy = x.cpu()  # sync
    copy.sum().item()
    float(copy.max())
    x.detach().cpu().numpy()  # sync: one, not two
    x.to("cpu", non_blocking=True).sum().item()  # an asynchronous copy into host memory: no wait
    x.to("cpu", None, True).tolist()


def case_a_moved_tensor_keeps_its_host_original():
    device = device_from_cuda()
    lengths = torch.tensor([3, 1, 2])
    on_device = lengths.to(device)
    lengths.max().item()  # the original stays on the host; on the CPU .to() returned it unchanged
    on_device.max().item()  # sync


def case_in_place_keeps_the_place():
    device = device_from_cuda()
    host = torch.zeros(3)
    host.add_(1)
    host.copy_(torch.ones(3))
    host.sum().item()
    torch.add(torch.ones(3, device=device), 1, out=host)
    host.sum().item()
    x = torch.zeros(3, device=device)
    x.add_(host)
    x.sum().item()  # sync


class Records(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"x": torch.full((2,), float(i)), "ids": [torch.tensor(i)]}


class Numbers(Dataset):
    def __init__(self):
        self.values = torch.arange(20.0)

    def __len__(self):
        return 20

    def __getitem__(self, i):
        value = self.values[i]
        if value.item() < 0:  # the dataset's own tensors: on the host in a GPU run too
            raise IndexError(i)
        return value, torch.tensor(i)


def case_data_pipeline():
    device = device_from_cuda()
    loader = DataLoader(Numbers(), batch_size=5, shuffle=True)  # the sampler: randperm(...).tolist()
    for values, ids in loader:
        ids.max().item()  # the batch's ids stay on the host
        values = values.to(device)
        values.sum().item()  # sync: 4


def case_a_sampler_alone():
    data = TensorDataset(torch.arange(8.0))
    indices = list(RandomSampler(data))
    data.tensors[0][indices].sum().item()


def case_rng_state():
    state = torch.get_rng_state()
    state[:4].tolist()
    generator = torch.Generator().manual_seed(1)
    torch.randn(3, generator=generator).sum().item()


def case_optimizer_step_counters():
    device = device_from_cuda()
    model = Small().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(2, 3, device=device)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    opt.state[model.fc.weight]["step"].item()  # a step counter: on the host on every device
    opt.state[model.fc.weight]["exp_avg"].abs().max().item()  # sync


def case_size_dependent_ops():
    device = device_from_cuda()
    x = torch.randn(6, device=device)
    repeats = torch.tensor([1, 2, 1, 2, 1, 2], device=device)
    x.repeat_interleave(repeats)  # sync
    torch.repeat_interleave(x, repeats=repeats)  # sync
    torch.repeat_interleave(x, repeats, output_size=9)  # the size is given: no sync
    x.repeat_interleave(torch.tensor(2, device=device))  # one count for all: no sync
    torch.repeat_interleave(x, torch.tensor([1, 2, 1, 2, 1, 2]))
    y = x.clone()
    y[y > 0] = torch.zeros((), device=device)  # sync: a device value into a masked place
    y[y > 0] = torch.ones(6, device=device)[y > 0]  # sync: 2 (the read on the right, the masked write)
    y[y > 0] = torch.tensor(1.0)  # a host scalar: a masked fill
    y[y > 0, ...] = 2.0  # sync
    x[x > 0]  # sync
    torch.nonzero(x)  # sync
    x.unique()  # sync
    torch.where(x > 0)  # sync
    torch.where(x > 0, x, 0.0)
    host = torch.randn(6)
    host[host > 0]
    host.nonzero()
    x[x > 0] = 0.0  # a masked fill: no sync


def case_made_without_a_device_stays_home():
    x = torch.randn(3)
    y = (x * 2).exp()
    if y.sum() > 0:
        pass
    y.tolist()


@pytest.mark.parametrize("case", [
    case_cuda_method, case_to_a_device_variable, case_device_argument, case_module_to, case_module_cuda,
    case_computed_from_device, case_following_other_tensors, case_device_chosen_by_the_caller,
    case_a_device_passed_into_a_comprehension, case_spelled_as_the_cpu, case_a_moved_tensor_keeps_its_host_original,
    case_in_place_keeps_the_place,
    case_data_pipeline, case_a_sampler_alone, case_rng_state, case_optimizer_step_counters,
    case_size_dependent_ops, case_made_without_a_device_stays_home,
], ids=lambda case: case.__name__[5:])
def test_explain_counts_syncs_on_what_the_program_puts_on_the_device(case):
    assert explain_policy(case) == marked(case)


def test_every_case_marks_what_it_means():
    """The markers are read right: a case with syncs has them, one without has none."""
    assert marked(case_cuda_method)[line(case_cuda_method, "x.sum().item()")] == 1
    assert line(case_cuda_method, "torch.randn(3).sum().item()") not in marked(case_cuda_method)
    assert marked(case_size_dependent_ops)[line(case_size_dependent_ops, "torch.ones(6, device=device)[y > 0]")] == 2
    assert marked(case_made_without_a_device_stays_home) == {}
    assert marked(case_data_pipeline) == {line(case_data_pipeline, "values.sum().item()"): 4}


def line(case, text: str) -> int:
    code = case.__code__
    for number in range(code.co_firstlineno, len(SOURCE) + 1):
        if text in SOURCE[number - 1]:
            return number
    raise AssertionError(text)


def test_the_sync_of_a_dataloader_internal_is_not_the_users():
    """The DataLoader's seed `.item()` and the sampler's `.tolist()` run in torch's own files: no
    event at all, not even one placed at the user's loop."""
    _, events = run(case_data_pipeline, assume_device=False)
    assert all(event["origin"] is None for event in events), events
    _, events = run(case_data_pipeline, assume_device=True)
    assert all(event["origin"] is None for event in events), events


# -- no_host_syncs's policy: every tensor is on the device but the host ones --------------------

def case_unplaced_tensors_stand_for_device_tensors():
    x = torch.randn(4)
    x.sum().item()  # sync
    loss = (x * 2).mean()
    print(f"{loss:.2f}")  # sync
    host = x.cpu()  # sync
    host.sum().item()
    (host * 2).max().item()
    torch.zeros(2, device="cpu").sum().item()
    torch.zeros(2, device=CPU).tolist()


def case_batches_from_a_loader_are_on_the_host():
    model = Small()
    loader = DataLoader(Numbers(), batch_size=10)
    for values, ids in loader:
        ids.max().item()
        model(values[:, None].expand(-1, 3)).sum().item()  # sync: 2
    weights = torch.ones(6)  # a sampler's weights: read by torch's sampler itself
    records = DataLoader(Records(), batch_size=3, sampler=WeightedRandomSampler(weights, 6))
    for batch in records:
        batch["ids"][0].max().item()
        batch["x"].sum().item()


@pytest.mark.parametrize("case", [case_unplaced_tensors_stand_for_device_tensors,
                                  case_batches_from_a_loader_are_on_the_host], ids=lambda case: case.__name__[5:])
def test_guards_take_unplaced_tensors_for_device_tensors(case):
    assert guard_policy(case) == marked(case)


def test_the_same_code_under_both_policies():
    """Unplaced tensors: the host for explain (the program never moved them), the device for a test."""
    assert explain_policy(case_made_without_a_device_stays_home) == {}
    assert guard_policy(case_made_without_a_device_stays_home) == {
        line(case_made_without_a_device_stays_home, "if y.sum() > 0:"): 1,
        line(case_made_without_a_device_stays_home, "y.tolist()"): 1}


def test_a_guard_follows_every_call_only_once_the_block_made_a_host_tensor():
    """The cheap path: with no host tensor, nothing but the sync points is hooked."""
    counter = SyncCounter(lambda path: is_user_file(path, torch_dirs()))
    depth = torch._C._len_torch_function_stack()
    with sanitizing(counter, hypothetical=True, assume_device=True) as sanitizer:
        torch.randn(3).sum().item()
        assert torch._C._len_torch_function_stack() == depth and sanitizer.follower is None
        torch.randn(3).cpu()
        assert torch._C._len_torch_function_stack() == depth + 1 and sanitizer.follower is not None
    assert torch._C._len_torch_function_stack() == depth
    with sanitizing(counter, hypothetical=True, assume_device=False) as sanitizer:  # explain follows from the start
        assert torch._C._len_torch_function_stack() == depth + 1
    assert torch._C._len_torch_function_stack() == depth


def test_everything_hooked_is_put_back():
    tensor_names = ("item", "__bool__", "__format__", "__getitem__", "__setitem__", "to", "cpu", "cuda", "tolist")
    before = {name: torch.Tensor.__dict__.get(name) for name in tensor_names}
    functions = {name: getattr(torch, name) for name in ("zeros", "tensor", "nonzero", "where", "equal")}
    synchronize, next_batch = torch.cuda.synchronize, torch.utils.data.dataloader._BaseDataLoaderIter.__next__
    counter = SyncCounter(lambda path: True)
    with pytest.raises(ZeroDivisionError):
        with sanitizing(counter, hypothetical=True, assume_device=True):
            with sanitizing(counter, hypothetical=True, assume_device=False):
                assert torch.Tensor.__dict__.get("item") is not None
                1 / 0
    assert {name: torch.Tensor.__dict__.get(name) for name in tensor_names} == before
    assert {name: getattr(torch, name) for name in functions} == functions
    assert torch.cuda.synchronize is synchronize
    assert torch.utils.data.dataloader._BaseDataLoaderIter.__next__ is next_batch


def test_another_thread_is_not_watched():
    import threading

    counter = SyncCounter(lambda path: True)
    with sanitizing(counter, hypothetical=True, assume_device=True):
        worker = threading.Thread(target=lambda: torch.ones(2).sum().item())
        worker.start()
        worker.join()
    assert counter.take() == []


def test_waits_are_added_per_site_when_timed():
    counter = SyncCounter(lambda path: True)
    for wait in (2_000_000, 1_500_000, None):
        what = "`.item()` reads a value on the host" if wait else "`.cpu()` copies the tensor to the host"
        counter.record(what, sys._getframe(), wait_ns=wait)
    item, cpu = counter.take()
    assert (item["count"], item["wait_ms"]) == (2, 3.5)
    assert cpu["count"] == 1 and "wait_ms" not in cpu
    assert counter.take() == []
    counter.paused = True
    counter.record("`.item()` reads a value on the host", sys._getframe())
    assert counter.take() == []


# -- a whole training script under `ptlint explain --syncs`, on the CPU ---------------------------

def test_a_training_script_reports_exactly_its_three_reads():
    """device = "cuda" if available else "cpu", a DataLoader with a shuffling sampler, Adam, three
    per-step reads of device values and one read of a host-only tensor (the batch's ids): exactly
    the three are reported, once each, with their count per run."""
    import json

    from helpers import FIXTURES, REPO, run_ptlint

    script = FIXTURES / "dynamic" / "shadow_train.py"
    result = run_ptlint("explain", "--syncs", "--device", "cpu", "--output-format", "json", "--script",
                        str(script.relative_to(REPO)), "--", "--epochs", "2", cwd=REPO)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    lines = script.read_text().splitlines()
    expected = [number for number, text in enumerate(lines, 1) if text.rstrip().endswith("# sync")]
    assert len(expected) == 3
    syncs = [f for f in findings if f["code"] == "PTL452"]
    assert [(f["line"], f["count"]) for f in syncs] == [(number, 8) for number in expected]  # 4 batches x 2 epochs
    assert all("origin" not in f for f in syncs)
    assert [f for f in findings if f["code"] != "PTL452"] == []  # nothing compiled, nothing failed
    assert "3 host-sync site(s)" in result.stderr
    assert "note: host syncs are counted, not timed, on cpu" in result.stderr


def positions(x):
    steps = torch.arange(x.shape[0], device=x.device)
    return torch.where(x > 0, x, steps.float()).sum()


def test_a_compiled_function_inside_the_guards_is_traced_as_without_them():
    """Dynamo traces torch's own functions, not the sanitizer's hooks on them: no graph break."""
    from ptlint.testing import no_graph_breaks, no_host_syncs

    with no_graph_breaks() as breaks, no_host_syncs(max=1) as syncs:
        x = torch.randn(5)  # on a CPU-only machine the guard takes it to be on the device
        total = torch.compile(positions, backend="eager")(x.cuda() if torch.cuda.is_available() else x)
        total.item()
    assert (breaks.count, syncs.count) == (0, 1)


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="needs a CUDA device: the host's wait at a sync is measured only there")
def test_on_cuda_the_wait_at_a_read_is_the_queued_work():
    """Queue about 20 ms of matmuls (CUDA events say how long), then read one value: the wait
    recorded at that line is that long, within 25%; a read of a CPU tensor is no sync at all."""
    x = torch.randn(2048, 2048, device="cuda") / 64
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    counter = SyncCounter(lambda path: is_user_file(path, torch_dirs()))
    torch.tanh(x @ x).sum().item()  # cuBLAS starts on the first product: not inside the timed queue
    with sanitizing(counter, hypothetical=False, assume_device=False, timed=True):
        torch.cuda.synchronize()
        start.record()
        y = x
        for _ in range(64):
            y = torch.tanh(y @ x)
        end.record()
        y.sum().item()
        torch.ones(3).sum().item()
    events = [e for e in counter.take() if "synchronize" not in e["what"]]
    assert [e["count"] for e in events] == [1]
    assert events[0]["wait_ms"] == pytest.approx(start.elapsed_time(end), rel=0.25)
