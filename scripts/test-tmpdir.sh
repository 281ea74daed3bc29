# Sourced by the scripts that run the test suite (test.sh, check-hardened.sh): the tests'
# files (GoogleTest's TempDir) go to a directory of this run's own, removed when the script
# exits. In /tmp itself their fixed names would meet another run's, and stayed behind (about
# 160 files a run). Mode 1777 as /tmp's: some steps run as the tests' local accounts.
TEST_TMPDIR=$(mktemp -d /tmp/gridrt-tests-XXXXXX)
export TEST_TMPDIR
trap 'rm -rf "$TEST_TMPDIR"' EXIT
chmod 1777 "$TEST_TMPDIR"
