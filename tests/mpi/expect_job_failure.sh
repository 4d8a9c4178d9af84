#!/bin/sh
# expect_job_failure.sh BOUND_S COMMAND...: runs COMMAND (an MPI job in
# which a rank dies) and passes when it ends by itself with a non-zero
# status within BOUND_S seconds. A job still running at the bound is ended
# (timeout(1)) and fails the test (a hang), as does a job that ends with
# status 0 (a rank finished without its peer). Whether the job ended by
# itself is told by the time it took, not by its status: the watchdog's
# MPI_Abort uses 124 too.
bound=$1
shift
start=$(date +%s)
timeout -k 5 "$bound" "$@"
rc=$?
elapsed=$(($(date +%s) - start))
echo "expect_job_failure: the job ended with status $rc after ${elapsed} s (bound ${bound} s)"
if [ "$elapsed" -ge "$bound" ]; then
  echo "expect_job_failure: FAIL: the job did not end by itself within ${bound} s (a hang)"
  exit 1
fi
if [ "$rc" -eq 0 ]; then
  echo "expect_job_failure: FAIL: the job succeeded although a rank died"
  exit 1
fi
echo "expect_job_failure: ok: the job failed within the bound"
exit 0
