"""What a run needs from its machine and disk: outputs, checkpoints, the workdir, signals, memory."""
