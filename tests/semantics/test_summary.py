"""Facts a file's summary reads from its text alone."""

from __future__ import annotations

import pytest

from ptlint.semantics.summary import names_accelerator


@pytest.mark.parametrize("text", [
    "x = x.cuda()", "torch.device('xpu')", "import torch_xla.core.xla_model as xm", "from accelerate import Accelerator",
    "import lightning.pytorch as pl", "import deepspeed", "fabric = Fabric()", "import colossalai",
    "nn.DataParallel(model)", "backend='nccl'", "torch.cuda.get_device_name()", "DistributedDataParallel(m, device_ids=[0])",
    "import ray.train", "torch.backends.mps.is_available()", "device = 'npu'", "x.to('hpu')", "# on a tpu",
    "x = y.to(batch.device)", "inputs.device\n",
])
def test_text_that_names_an_accelerator(text):
    assert names_accelerator(text)


@pytest.mark.parametrize("text", [
    "x = x.float()", "dumps = 1", "inputs.devices", "mpsx = 1", "tpus = 2", "npu_count", "self.device_map = {}",
    "cpu = 'cpu'", "",
])
def test_text_that_does_not(text):
    assert not names_accelerator(text)
