"""Input-pipeline code: datasets, samplers, collators, augmentation. It runs on the host, on host
tensors, before a batch reaches the device: a read of a value there waits for nothing, and
nothing there is compiled.

- `pipeline_path(path)`: the file is input-pipeline code by where it lives (a `data/`,
  `datasets/`, `augment/`, `transforms/` ... folder) or by its name (`collate.py`,
  `my_dataset.py`, `image_processing_x.py`); also tools that show values to a person (`debug`,
  `plot`, `visualize`) and ONNX Runtime code, which computes in NumPy;
- `in_host_code(ctx)`: where the traversal is runs on the host: in such a file, in a function
  named for the CPU (`_pool_cpu`), or in a method of a `Dataset` / `Sampler` class.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

# Folders and file names of input-pipeline code: datasets, samplers, collators, augmentation
# (speechbrain's `augment/`, `transforms/` packages).
PIPELINE_FOLDERS = {"data", "datasets", "dataio", "dataloaders", "augment", "augmentation", "augmentations",
                    "transforms"}
PIPELINE_FILE_WORDS = ("collat", "augment", "dataset", "sampler", "dataloader", "transforms", "processing",
                       "processor")
# Tools whose job is to show values to a person: the host needs every one of them.
INSPECTION_FILE_WORDS = ("debug", "doctor", "diagnos", "plot", "visuali", "viz", "profil")
# ONNX Runtime pipelines compute in NumPy on the host.
HOST_RUNTIME_FILE_WORDS = ("onnx",)
# Classes of the data pipeline: their methods work on host tensors.
HOST_CLASSES = {"Sampler", "BatchSampler", "Dataset", "IterableDataset", "DistributedSampler"}


def pipeline_path(path: str) -> bool:
    """The file is input-pipeline, inspection or host-runtime code by its folder or its name."""
    parts = path.replace("\\", "/").lower().split("/")
    return bool(set(parts[:-1]) & PIPELINE_FOLDERS) or any(
        word in parts[-1] for word in PIPELINE_FILE_WORDS + INSPECTION_FILE_WORDS + HOST_RUNTIME_FILE_WORDS)


def in_host_code(ctx: "FileFacts") -> bool:
    """Where the traversal is runs on the host, on host tensors: a file of the input pipeline
    (`pipeline_path`), a function named for the CPU, a method of a class deriving from a
    `torch.utils.data` class or named like one (`Sampler`, `Dataset`, ...)."""
    if pipeline_path(ctx.path):
        return True
    if any("cpu" in getattr(function, "name", "").lower().split("_") for function in ctx.functions):
        return True
    for cls in ctx.classes:
        for base in cls.bases:
            base = base.value if isinstance(base, ast.Subscript) else base  # `Sampler[int]`
            qual = ctx.qualname(base) or ""
            name = qual or getattr(base, "id", getattr(base, "attr", ""))
            if name.startswith("torch.utils.data.") or name.rsplit(".", 1)[-1] in HOST_CLASSES:
                return True
    return False
