"""The learning workload (issue 19): data, clients and the shuffled-SGD loop."""

from shufflesim.simulator.learning.data import (
    LEARN_EXTRA,
    Dataset,
    Split,
    load_dataset,
    load_digits_dataset,
    load_table,
    prepare,
    split_indices,
)
from shufflesim.simulator.learning.train import (
    SCHEDULES,
    LearningConfig,
    TrainingResult,
    learning_rate,
    train,
    train_on_split,
)

__all__ = [
    "LEARN_EXTRA", "SCHEDULES", "Dataset", "LearningConfig", "Split", "TrainingResult",
    "learning_rate", "load_dataset", "load_digits_dataset", "load_table", "prepare",
    "split_indices", "train", "train_on_split",
]
