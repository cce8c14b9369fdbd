from .core import EvalVerifier, PromptResult, evaluate_prompts, score_prompt, summarize
from .estimators import maj_at_k, pass_at_k, vote
from .intervals import bootstrap_mean_ci
from .runner import evaluate_dataset, pass_rate_rows, summary_table, write_results
