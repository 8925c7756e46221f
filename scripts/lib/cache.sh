# Sourced by the scripts: where benchq keeps what it downloads and builds
# outside the repository. The same rule as internal/cachedir (Go), which
# its test holds to this file:
#   benchq_cache        $BENCHQ_CACHE, else $XDG_CACHE_HOME/benchq, else ~/.cache/benchq
#   benchq_ycsb_lib     $BENCHQ_YCSB_LIB, else $benchq_cache/ycsb/lib
#   benchq_ycsb_workloads  $BENCHQ_YCSB_WORKLOADS, else $benchq_cache/ycsb/workloads
#   benchq_k8s_cache    $BENCHQ_K8S_CACHE, else $benchq_cache/k8s
# shellcheck shell=bash
benchq_cache=${BENCHQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/benchq}
benchq_ycsb_lib=${BENCHQ_YCSB_LIB:-$benchq_cache/ycsb/lib}
benchq_ycsb_workloads=${BENCHQ_YCSB_WORKLOADS:-$benchq_cache/ycsb/workloads}
benchq_k8s_cache=${BENCHQ_K8S_CACHE:-$benchq_cache/k8s}
