#!/usr/bin/env bash
# Every GPU check of this project in one run that fits in 8 minutes on one GPU (docs/gpu.md):
#   preflight          torch sees a CUDA GPU; versions, commit, nvidia-smi (benchmarks/gpu_preflight.py)
#   parity             bf16: stock GRPOTrainer and GRPOExtTrainer at default settings, bitwise (benchmarks/gpu_parity.py)
#   memory             measured peak CUDA memory of one step next to the estimate (benchmarks/gpu_memory.py)
#   overhead           extension / stock step time on the GPU (benchmarks/trainer_overhead.py --quick)
#   accelerate_single  examples/grpo_math.py under `accelerate launch`, one process (single_gpu.yaml)
#   accelerate_fsdp2   the same with examples/accelerate_configs/fsdp2.yaml, one process
#   accelerate_zero2   the same with examples/accelerate_configs/zero2.yaml, one process (skipped without deepspeed)
#   accelerate_zero3   the same with examples/accelerate_configs/zero3.yaml, one process (skipped without deepspeed)
#
#   bash benchmarks/gpu_suite.sh                        # everything; results in outputs/gpu_suite/<time>/
#   bash benchmarks/gpu_suite.sh --output_dir DIR --only parity,memory
#   bash benchmarks/gpu_suite.sh --dry-run              # CPU, seconds: print each command, check each entry point
#
# Each step has its own time limit and log (DIR/<step>.log); the whole run stops starting steps when --budget seconds
# are spent. DIR/summary.md lists each step's status and wall time, then the figures; exit status 1 when a step
# failed, timed out or was not run for lack of time.
set -u -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
STEPS=(preflight parity memory overhead accelerate_single accelerate_fsdp2 accelerate_zero2 accelerate_zero3)
declare -A LIMIT_S=(
    [preflight]=60 [parity]=150 [memory]=150 [overhead]=150
    [accelerate_single]=75 [accelerate_fsdp2]=75 [accelerate_zero2]=90 [accelerate_zero3]=90
)
LAUNCH_STEPS=10 # optimizer steps of each accelerate launch
SKIP_RC=200     # a step function returns this when a package it needs is missing

usage() {
    sed -n '2,/^set /p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    cat <<EOF
Options:
  --dry-run          print every command and check every entry point parses its arguments; no GPU, no training
  --output_dir DIR   results folder (default outputs/gpu_suite/<UTC time>)
  --only A,B         run only these steps (of: ${STEPS[*]})
  --budget SECONDS   stop starting steps after this many seconds (default 470)
  --python PATH      interpreter (default: \$PYTHON, else .venv/bin/python, else python3)
EOF
}

DRY_RUN=0
OUT_DIR="outputs/gpu_suite/$(date -u +%Y%m%dT%H%M%SZ)"
ONLY=""
BUDGET_S=470
PY="${PYTHON:-}"
while (($#)); do
    case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --output_dir) OUT_DIR="${2:?--output_dir needs a folder}"; shift ;;
    --only) ONLY="${2:?--only needs step names}"; shift ;;
    --budget) BUDGET_S="${2:?--budget needs seconds}"; shift ;;
    --python) PY="${2:?--python needs a path}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu_suite.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [[ -z "$PY" ]]; then
    if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
SELECTED=("${STEPS[@]}")
if [[ -n "$ONLY" ]]; then
    IFS=, read -r -a SELECTED <<<"$ONLY"
    for name in "${SELECTED[@]}"; do
        if [[ -z "${LIMIT_S[$name]:-}" ]]; then
            echo "gpu_suite.sh: --only: unknown step '$name'; choose from ${STEPS[*]}" >&2
            exit 2
        fi
    done
fi
if ! [[ "$BUDGET_S" =~ ^[0-9]+$ ]]; then
    echo "gpu_suite.sh: --budget: '$BUDGET_S' is not a whole number of seconds" >&2
    exit 2
fi

export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE:-1}"
export TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error PYTHONUNBUFFERED=1

# --- running one command of a step: printed in a dry run, run under the step's deadline otherwise -------------------
STEP_DEADLINE=0
x() {
    if ((DRY_RUN)); then
        printf '    %s\n' "$(printf '%q ' "$@")"
        return 0
    fi
    local left=$((STEP_DEADLINE - SECONDS))
    ((left > 0)) || return 124
    printf '+ %s\n' "$(printf '%q ' "$@")"
    timeout --kill-after=5 "$left" "$@"
}

needs_module() { # needs_module MODULE HINT: skip the step when python cannot import MODULE
    if "$PY" -c "import $1" 2>/dev/null; then
        return 0
    fi
    if ((DRY_RUN)); then
        echo "    (python module $1 is missing here: this step would be skipped; $2)"
        return 0
    fi
    echo "SKIP: python module $1 is not installed ($2)"
    return "$SKIP_RC"
}

expect_in_log() { # after a launch: the script's own line saying how many steps it trained
    ((DRY_RUN)) && { echo "    then: expect \"$1\" in the log"; return 0; }
    grep -qF "$1" "$LOG" || { echo "FAIL: \"$1\" not found in the output"; return 1; }
}

launch_example() { # launch_example CONFIG_YAML NAME
    x "$PY" -m accelerate.commands.launch --config_file "examples/accelerate_configs/$1" --num_processes 1 \
        --num_machines 1 --main_process_port 29561 examples/grpo_math.py --max_steps "$LAUNCH_STEPS" \
        --logging_steps 1 --output_dir "$OUT_DIR/$2" --report_to none || return
    expect_in_log "Trained $LAUNCH_STEPS steps on 1 process(es)"
}

# --- the steps --------------------------------------------------------------------------------------------------------
step_preflight() {
    x "$PY" benchmarks/gpu_preflight.py || return
    if ((!DRY_RUN)); then
        git rev-parse HEAD 2>/dev/null | sed 's/^/commit /'
        nvidia-smi >"$OUT_DIR/nvidia-smi.txt" 2>&1 || echo "(nvidia-smi not available)"
    fi
}
step_parity() { x "$PY" benchmarks/gpu_parity.py --json "$OUT_DIR/parity.json"; }
step_memory() { x "$PY" benchmarks/gpu_memory.py --precision bf16 --group-size 8 --batch-size 2; }
step_overhead() { x "$PY" benchmarks/trainer_overhead.py --quick --rounds 3 --steps 10 --device cuda --bf16; }
step_accelerate_single() { launch_example single_gpu.yaml accelerate_single; }
step_accelerate_fsdp2() { launch_example fsdp2.yaml accelerate_fsdp2; }
step_accelerate_zero2() {
    needs_module deepspeed "pip install deepspeed" || return
    launch_example zero2.yaml accelerate_zero2
}
step_accelerate_zero3() {
    needs_module deepspeed "pip install deepspeed" || return
    launch_example zero3.yaml accelerate_zero3
}

# --- dry-run checks: each entry point exists and parses the arguments the step gives it, on CPU ----------------------
check_preflight() { "$PY" benchmarks/gpu_preflight.py --dry-run; }
check_parity() { "$PY" benchmarks/gpu_parity.py --dry-run; }
check_memory() { "$PY" benchmarks/gpu_memory.py --precision bf16 --group-size 8 --batch-size 2 --dry-run; }
check_overhead() { "$PY" benchmarks/trainer_overhead.py --quick --rounds 3 --steps 10 --device cuda --bf16 --dry-run; }
# grpo_math.py takes seconds to import, so one check covers every launch step: accelerate reads each config and the
# script parses the flags the steps give it.
read -r -d '' LAUNCH_CHECK_PY <<'PY'
import runpy, sys
from accelerate.commands.config.config_args import load_config_from_file

split = sys.argv.index("--")
for path in sys.argv[1:split]:
    print(f"{path}: {load_config_from_file(path).distributed_type}")
sys.path.insert(0, "examples")
sys.argv = sys.argv[split + 1 :]
script_args, training_args, model_args = runpy.run_path(sys.argv[0], run_name="gpu_suite_check")["parse_args"]()
print(f"{sys.argv[0]}: flags parsed, max_steps={training_args.max_steps}")
PY
LAUNCH_CHECK_RC=""
check_launch() { # check_launch CONFIG_YAML
    if [[ -z "$LAUNCH_CHECK_RC" ]]; then
        LAUNCH_CHECK_OUT="$("$PY" -c "$LAUNCH_CHECK_PY" examples/accelerate_configs/{single_gpu,fsdp2,zero2,zero3}.yaml -- \
            examples/grpo_math.py --max_steps "$LAUNCH_STEPS" --logging_steps 1 --output_dir "$OUT_DIR/check" \
            --report_to none 2>&1)"
        LAUNCH_CHECK_RC=$?
    fi
    echo "$LAUNCH_CHECK_OUT"
    grep -q "^examples/accelerate_configs/$1: " <<<"$LAUNCH_CHECK_OUT" || return 1
    return "$LAUNCH_CHECK_RC"
}
check_accelerate_single() { check_launch single_gpu.yaml; }
check_accelerate_fsdp2() { check_launch fsdp2.yaml; }
check_accelerate_zero2() { check_launch zero2.yaml; }
check_accelerate_zero3() { check_launch zero3.yaml; }

# --- run ------------------------------------------------------------------------------------------------------------
declare -A STATUS WALL
FAILED=0
if ((DRY_RUN)); then
    echo "Dry run: $PY; results would go to $OUT_DIR"
    CHECK_LOG="$(mktemp)"
    for name in "${SELECTED[@]}"; do
        echo "[$name] limit ${LIMIT_S[$name]} s:"
        start=$SECONDS
        LOG=/dev/null "step_$name"
        if "check_$name" >"$CHECK_LOG" 2>&1; then
            STATUS[$name]="ok (dry run)"
        else
            STATUS[$name]="FAILED check"
            FAILED=1
            sed 's/^/    | /' "$CHECK_LOG" | tail -n 30
        fi
        WALL[$name]=$((SECONDS - start))
    done
    rm -f "$CHECK_LOG"
else
    mkdir -p "$OUT_DIR" || exit 2
    echo "GPU suite: $PY; results in $OUT_DIR; budget $BUDGET_S s"
    for name in "${SELECTED[@]}"; do
        LOG="$OUT_DIR/$name.log"
        left=$((BUDGET_S - SECONDS))
        limit=${LIMIT_S[$name]}
        ((left < limit)) && limit=$left
        if ((limit < 15)); then
            STATUS[$name]="NOT RUN (budget spent)"
            WALL[$name]=0
            FAILED=1
            continue
        fi
        LIMIT_S[$name]=$limit
        echo "[$name] running, limit $limit s, log $LOG"
        start=$SECONDS
        STEP_DEADLINE=$((SECONDS + limit))
        "step_$name" >"$LOG" 2>&1
        rc=$?
        WALL[$name]=$((SECONDS - start))
        case $rc in
        0) STATUS[$name]="PASS" ;;
        "$SKIP_RC") STATUS[$name]="$(tail -n 1 "$LOG")" ;;
        124 | 137) STATUS[$name]="TIMEOUT (limit $limit s)"; FAILED=1 ;;
        *) STATUS[$name]="FAIL (exit $rc)"; FAILED=1 ;;
        esac
        echo "[$name] ${STATUS[$name]} in ${WALL[$name]} s"
        if [[ "$name" == preflight && $rc -ne 0 ]]; then
            echo "Preflight failed: the GPU steps are not run."
            tail -n 5 "$LOG"
            break
        fi
    done
fi

summary() {
    echo "## GPU suite $( ((DRY_RUN)) && echo '(dry run) ')$(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "| step | status | wall s | limit s |"
    echo "| --- | --- | --- | --- |"
    for name in "${SELECTED[@]}"; do
        echo "| $name | ${STATUS[$name]:-NOT RUN} | ${WALL[$name]:-0} | ${LIMIT_S[$name]} |"
    done
    ((DRY_RUN)) && return
    for name in "${SELECTED[@]}"; do
        [[ -f "$OUT_DIR/$name.log" ]] || continue
        echo
        echo "### $name (last lines of $name.log)"
        echo '```text'
        grep -v '^+ ' "$OUT_DIR/$name.log" | tail -n 25
        echo '```'
    done
}
echo
if ((DRY_RUN)); then
    summary
else
    summary | tee "$OUT_DIR/summary.md"
fi
for name in "${SELECTED[@]}"; do
    [[ -n "${STATUS[$name]:-}" ]] || FAILED=1 # not reached: preflight failed
done
exit "$FAILED"
