#!/bin/bash
# The run-tests.sh of a terminal-bench task that brings none, as terminal-bench's harness supplies it: set up
# uv and pytest with setup-uv-pytest.sh (sourced), then run the task's tests with run-uv-pytest.sh. Both come
# from the task's tests/ when it has them, else from this folder (their offline equivalents).
source "$TEST_DIR/setup-uv-pytest.sh"
bash "$TEST_DIR/run-uv-pytest.sh"
