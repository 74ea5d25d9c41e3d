"""Describing a table column by column."""
from __future__ import annotations

import torch

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import LibraryNode, as_float, need_rank, step


class ColumnStats(LibraryNode):
    type = "foundations:Edu-ColumnStats"
    category = "Classical"
    description = "Mean, spread, smallest and largest value of every column of a table."
    details = (
        "The table is a 2-D tensor [rows, columns]: one row per example (a student, a flower), "
        "one column per measurement. For each column the node adds the values up, divides by "
        "the number of rows to get the mean μ, measures how far each value lies from μ, and "
        "turns those distances into the standard deviation σ: square them, average them (the "
        "variance), take the square root. A [150, 4] table gives four means, four stds, four "
        "mins and four maxs. With 'unbiased' on, the variance divides by rows − 1 instead of "
        "rows (the sample std). Turn on Verbose internals to watch every step."
    )
    inputs = (Port("table", description="2-D tensor [rows, columns]"),)
    outputs = (Port("means"), Port("stds"), Port("mins"), Port("maxs"), Port("counts"))
    params = (Param("unbiased", "bool", False,
                    "Divide the variance by rows − 1 (sample std) instead of rows"),)
    records_steps = True

    def run(self, ctx, params, table):
        need_rank(table, (2,), "Edu-ColumnStats", "[rows, columns]")
        if table.shape[0] == 0:
            raise NodeError("Edu-ColumnStats needs at least one row, but the table is empty")
        x = as_float(table)
        rows, columns = x.shape
        step(ctx, "input", f"The table: {rows} rows, {columns} columns.",
             {"rows": float(rows), "columns": float(columns)}, table=x)
        col_sum = x.sum(dim=0)
        step(ctx, "col_sum", r"Add each column up: $\sum_i x_{ij}$.", col_sum=col_sum)
        counts = torch.full_like(col_sum, float(rows))
        means = col_sum / counts
        step(ctx, "means", r"Divide by the number of rows: $\mu_j = \frac{1}{N}\sum_i x_{ij}$.",
             means=means, counts=counts)
        deviations = x - means
        step(ctx, "deviations", r"How far every value lies from its column's mean: "
             r"$x_{ij} - \mu_j$.", deviations=deviations)
        squared = deviations ** 2
        denominator = float(rows - 1) if params["unbiased"] and rows > 1 else float(rows)
        variances = squared.sum(dim=0) / denominator
        stds = variances.sqrt()
        step(ctx, "stds", r"Square the distances, average them (divided by "
             f"{denominator:g}) to get the variance, then take the square root: "
             r"$\sigma_j = \sqrt{\frac{1}{" + f"{denominator:g}" + r"}\sum_i (x_{ij} - \mu_j)^2}$.",
             {"denominator": denominator}, squared=squared, variances=variances, stds=stds)
        mins, maxs = x.min(dim=0).values, x.max(dim=0).values
        step(ctx, "range", "The smallest and largest value of each column: its range.",
             mins=mins, maxs=maxs)
        return {"means": means, "stds": stds, "mins": mins, "maxs": maxs, "counts": counts}
