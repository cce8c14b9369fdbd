from .code.verifier import CodeVerifier
from .core.contract import VerificationResult, Verifier
from .core.registry import get_verifier, list_verifiers, register_verifier
from .core.reward import VerifierReward, as_reward_function
from .math.verifier import MathVerifier
