"""A property-based fuzzer over every write API of the four services (issue #18).

``routes`` reads the targets from the app's route tables; ``bodies`` holds a
valid example per write route and ``known`` the requests issue #18 reports;
``hostile`` the hostile values and the raw JSON encoder; ``strategies`` the
Hypothesis strategies; ``world`` the cloud with real resources to aim at and
``factories`` fresh ones; ``runner`` sends the requests and checks the
properties, ``report`` says what failed; ``campaign`` ties them together for
the CI test (test_fuzz.py) and ``scripts/fuzz`` (``__main__``).
See docs/fuzzing.md.
"""
