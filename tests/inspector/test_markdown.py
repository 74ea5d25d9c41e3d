"""Step descriptions: Markdown with server-typeset MathML, safe and never an error."""
from __future__ import annotations

from django.template import engines

from apps.inspector.markdown import mathml, render


def test_inline_maths_becomes_mathml():
    html = render(r"Divide: $p_i = e^{z_i} / Z$.")
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in html
    assert "<msub><mi>p</mi><mi>i</mi></msub>" in html and "$" not in html


def test_display_maths_is_a_block_formula():
    assert 'display="block"' in render(r"$$\sum_j e^{z_j}$$") and "∑" in render(r"$$\sum_j e^{z_j}$$")


def test_markdown_emphasis_lists_and_code():
    html = render("**mean** of each *row*\n\n- one\n- two\n\n`x.mean()`")
    assert "<strong>mean</strong>" in html and "<em>row</em>" in html
    assert "<li>one</li>" in html and "<code>x.mean()</code>" in html


def test_raw_html_is_shown_as_text_never_run():
    html = render('<script>alert(1)</script> <img src=x onerror="alert(2)">')
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html


def test_text_inside_a_formula_is_escaped():
    html = mathml(r"a < b \text{<b>&</b>}")
    assert "<b>" not in html and "&lt;b&gt;&amp;&lt;/b&gt;" in html and "<mo>&lt;</mo>" in html


def test_dollar_amounts_are_not_formulas():
    assert "<math" not in render("It costs $5 or $ 6.")


def test_a_formula_latex2mathml_cannot_read_shows_as_code(monkeypatch):
    import apps.inspector.markdown as md

    def refuse(*args, **kwargs):
        raise ValueError("bad")
    monkeypatch.setattr(md, "convert_to_element", refuse)
    md.render.cache_clear()
    assert md.render(r"see $\frac{a$") == r'<p>see <code class="formula">\frac{a</code></p>'
    md.render.cache_clear()


def test_the_template_filter_renders_markdown():
    template = engines["django"].from_string("{% load maths %}{{ text|markdown }}")
    assert "<math" in template.render({"text": r"$\mu$"}) and "<em>x</em>" in template.render({"text": "*x*"})
