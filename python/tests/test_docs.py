"""Every snippet of docs/PYTHON.md runs, with the output it shows (the
```python blocks, as one doctest session)."""
import doctest
import os

import pytest

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "PYTHON.md")


@pytest.mark.skipif(not os.path.exists(DOC), reason="outside a checkout")
def test_python_md():
    with open(DOC) as f:
        lines, inside = [], False
        for line in f:
            if line.startswith("```"):
                inside = line.strip() == "```python"
                lines.append("\n")  # a fence ends the expected output before it
            elif inside:
                lines.append(line)
    test = doctest.DocTestParser().get_doctest("".join(lines), {}, "PYTHON.md", DOC, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 10 and result.failed == 0
