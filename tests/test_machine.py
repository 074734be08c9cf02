"""recon/runtime/machine.py: one line naming the device and the host CPU."""
import os

from recon.runtime import machine


def test_describe_names_the_platform_and_the_core_count():
  text = machine.describe()
  assert text.startswith('cpu: ') and f'{os.cpu_count()} cores visible' in text
  assert machine.cpu_model() in text and '\n' not in text
