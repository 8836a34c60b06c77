import os

from hypothesis import HealthCheck, settings

# Machines here are noisy: no per-example deadline. CI runs a fixed, derandomized set so a red
# run is reproducible; locally hypothesis explores freely.
settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")
