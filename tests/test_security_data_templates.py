"""Issue 32, Low 9: a project template that fails while it renders.

A project's ``templates/`` override that raised at render time (``{{ 1/0 }}``) ended ``build`` in
a traceback, and an undefined attribute's method call gave an error naming no file. Each is now
one ``Error: template error: <file>, line <n>: <reason>`` line, and the site is not half-updated.
"""

from __future__ import annotations

import pytest
from import_support import write_jsonl

BODIES = {
    "division by zero": "{{ 1/0 }}",
    "'evalsite.site.pages.home.HomePage object' has no attribute 'nothing'": "{{ page.nothing() }}",
    "no template 'missing.html'": '{% include "missing.html" %}',
    "access to attribute '__class__' of 'str' object is unsafe.": '{{ "".__class__ }}',
}


@pytest.fixture
def project_with_a_run(import_project, cli):
    rows = [{"id": f"q{i}", "input": f"question {i}", "output": "x", "score": i % 2} for i in range(3)]
    assert cli("import", "jsonl", str(write_jsonl(import_project / "results.jsonl", rows))).exit_code == 0
    return import_project


@pytest.mark.parametrize("reason", list(BODIES))
def test_a_runtime_error_names_the_template_file_and_line(project_with_a_run, cli, reason):
    templates = project_with_a_run / "templates"
    templates.mkdir()
    (templates / "index.html").write_text(
        '{% extends "builtin/index.html" %}\n{% block content %}\nhello\n\n' + BODIES[reason] + "\n{% endblock %}\n")
    result = cli("build")
    assert (result.exit_code, result.output) == (1, f"Error: template error: templates/index.html, line 5: {reason}\n")


def test_an_error_in_an_included_template_names_that_file(project_with_a_run, cli):
    templates = project_with_a_run / "templates"
    (templates / "parts").mkdir(parents=True)
    (templates / "parts" / "broken.html").write_text("ok\n{{ [1][5] }}\n")
    (templates / "index.html").write_text('{% extends "builtin/index.html" %}\n{% block content %}'
                                          '{% include "parts/broken.html" %}{% endblock %}\n')
    result = cli("build")
    assert result.exit_code == 1
    assert result.output.startswith("Error: template error: templates/parts/broken.html, line 2: ")
    (templates / "parts" / "broken.html").write_text("ok\n")
    assert cli("build").exit_code == 0  # once fixed, the site builds
