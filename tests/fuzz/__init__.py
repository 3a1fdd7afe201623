"""A property-based fuzzer over every write API of the four services (issue #18).

``routes`` reads the targets from the app's route tables, ``bodies`` holds a
valid example per write route, ``hostile`` the values and mutations,
``strategies`` the Hypothesis strategies, ``world`` the cloud with real
resources to aim at, ``runner`` sends the requests and checks the properties.
See docs/fuzzing.md.
"""
