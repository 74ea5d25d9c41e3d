"""The Foundations formula sheet: the formulas behind each step of the pack's Edu nodes, in
Markdown with $…$ LaTeX (the Inspector typesets it as MathML). Step names are those the
nodes record with Verbose internals on."""
from __future__ import annotations

from typing import Any

FORMULAS: dict[str, list[tuple[str, str]]] = {
    "foundations:Edu-ColumnStats": [
        ("input", "A table $X$ of $n$ rows (samples) and $m$ columns (features); $x_{ij}$ is row $i$, column $j$."),
        ("col_sum", "Sum each column: $S_j = \\sum_{i=1}^{n} x_{ij}$"),
        ("means", "Divide by the count: $\\mu_j = \\frac{S_j}{n}$"),
        ("deviations", "How far each value is from its column's mean: $d_{ij} = x_{ij} - \\mu_j$"),
        ("stds", "Square, average, take the root: $\\sigma_j^2 = \\frac{1}{n} \\sum_{i} d_{ij}^2$, "
                 "$\\sigma_j = \\sqrt{\\sigma_j^2}$. With `unbiased` on the denominator is $n - 1$."),
        ("range", "Smallest and largest value of each column: $\\min_i x_{ij}$ and $\\max_i x_{ij}$"),
    ],
    "foundations:Edu-KNN": [
        ("compute_distances", "From the query $q$ to every training row $x_i$: euclidean "
                              "$\\sqrt{\\sum_k (q_k - x_{ik})^2}$, manhattan $\\sum_k |q_k - x_{ik}|$, "
                              "cosine $1 - \\frac{q \\cdot x_i}{\\|q\\| \\, \\|x_i\\|}$"),
        ("topk", "Keep the $k$ training rows with the smallest distance: the neighbours $N_k(q)$."),
        ("vote", "The most common label among them: $\\hat{y} = \\mathrm{argmax}_c \\sum_{i \\in N_k(q)} [y_i = c]$"),
    ],
    "foundations:Edu-LinearRegression": [
        ("fit", "Closed form: $w = (X^\\top X + \\lambda I)^{-1} X^\\top y$. Gradient descent repeats "
                "$w \\leftarrow w - \\eta \\, \\frac{2}{n} X^\\top (Xw + b - y)$ for each epoch."),
        ("predict", "$\\hat{y} = X w + b$"),
    ],
    "foundations:Edu-LogisticRegression": [
        ("fit", "Probabilities $p = \\mathrm{softmax}(X W + b)$; each epoch lowers the cross-entropy "
                "$L = -\\frac{1}{n} \\sum_i \\log p_{i, y_i} + \\lambda \\|W\\|^2$ by "
                "$W \\leftarrow W - \\eta \\, \\nabla_W L$."),
        ("predict", "The most probable class: $\\hat{y} = \\mathrm{argmax}_c \\, p_c$"),
    ],
    "foundations:Edu-FFN": [
        ("input", "Token vectors $x \\in \\mathbb{R}^{d}$ ($d$ = `embed_dim`)."),
        ("linear1", "Widen: $h = x W_1 + b_1$, $W_1 \\in \\mathbb{R}^{d \\times h}$ ($h$ = `hidden_dim`)"),
        ("activation", "ReLU $a = \\max(0, h)$, or GELU $a = h \\, \\Phi(h)$"),
        ("linear2", "Back to $d$: $y = a W_2 + b_2$"),
    ],
    "foundations:Edu-TokenEmbedding": [
        ("input_tokens", "Each token becomes an id $t < V$ ($V$ = `vocab_size`): its hash modulo $V$, "
                         "or its place in the vocabulary."),
        ("embedding_table", "One learnable row per id: $E \\in \\mathbb{R}^{V \\times d}$"),
        ("lookup", "A token's vector is its row: $e_i = E_{t_i}$"),
    ],
}


def panel_context(node_type: str | None) -> dict[str, Any]:
    """What the formula sheet shows: the selected node's steps, or which nodes it covers."""
    short = {key: key.split(":", 1)[1] for key in FORMULAS}
    return {"node_name": short.get(node_type or ""), "formulas": FORMULAS.get(node_type or "", []),
            "covered": list(short.values()), "node_selected": node_type is not None}
