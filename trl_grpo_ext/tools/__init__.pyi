from .config import PythonToolConfig
from .metrics import TOOL_STATS, ToolCounts
from .python_tool import PythonSession, PythonToolFailure, make_python_tool, python
