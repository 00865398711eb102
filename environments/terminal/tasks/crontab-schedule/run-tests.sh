#!/bin/bash
# Runs the tests copied to $TEST_DIR (/tests) with pytest; -rA prints the per-test summary the score is read from.
cd "${TEST_DIR:-/tests}" && python3 -m pytest -rA -p no:cacheprovider test_outputs.py
