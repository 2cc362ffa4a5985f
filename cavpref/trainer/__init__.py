"""``CAVPrefTrainer`` (TRL's ``DPOTrainer`` with the CAVPref objective) and its pieces, one module per job."""

from cavpref.trainer.callbacks import JsonlLogger
from cavpref.trainer.trainer import CAVPrefTrainer

__all__ = ["CAVPrefTrainer", "JsonlLogger"]
