"""Working with a table's rows."""
from __future__ import annotations

import operator

from apps.graphs.nodes.base import NodeError, Param, Port
from apps.graphs.nodes.library._helpers import LibraryNode, as_float, need_rank, step

COMPARISONS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
               "==": operator.eq, "!=": operator.ne}
WRITTEN = {">": ">", ">=": r"\ge", "<": "<", "<=": r"\le", "==": "=", "!=": r"\ne"}


class FilterRows(LibraryNode):
    type = "edu:FilterRows"
    category = "EDU"
    description = "Keeps only the rows of a table whose chosen column passes a test (e.g. English > 80)."
    details = (
        "Pick a column, a comparison and a threshold: every row whose value in that column "
        "passes the test stays, the others go. Name the column with 'column_name' (wire the "
        "table's column names into 'columns', e.g. from a CSV reader) or count it with "
        "'column_index' (0 is the first column); a name wins over an index. A [5, 3] table "
        "filtered on column 1 > 80 gives the k passing rows as 'tensor' [k, 3], the true/false "
        "'mask' [5] that says which rows passed, and 'count' = k. Verbose internals shows the "
        "four steps: pick the column, compare, count, index."
    )
    inputs = (Port("table", description="2-D tensor [rows, columns]"),
              Port("columns", "LIST", optional=True, description="The columns' names"))
    outputs = (Port("tensor"), Port("mask"), Port("count", "SCALAR"))
    params = (
        Param("column_name", "string", "", "The column to test, by name (needs 'columns')"),
        Param("column_index", "int", 0, "The column to test, by position (0 = first)", min=0),
        Param("op", "select", ">", "The comparison", options=tuple(COMPARISONS)),
        Param("threshold", "float", 0.0, "The value each row is compared with"),
    )
    records_steps = True

    def run(self, ctx, params, table, columns=None):
        need_rank(table, (2,), "FilterRows", "[rows, columns]")
        x = as_float(table)
        index, name = self._column(params, columns, x.shape[1])
        step(ctx, "input", f"The table: {x.shape[0]} rows, {x.shape[1]} columns.",
             {"rows": float(x.shape[0]), "columns": float(x.shape[1])}, table=x)
        column = x[:, index]
        step(ctx, "pick_column", f"Take column {index}" + (f" ('{name}')" if name else "") + ".",
             column=column)
        mask = COMPARISONS[params["op"]](column, params["threshold"])
        step(ctx, "compare", f"Test every value: $x {WRITTEN[params['op']]} "
             f"{params['threshold']:g}$? (1 = passes, 0 = fails)", mask=mask.float())
        count = int(mask.sum())
        step(ctx, "count", "Add up the passes: how many rows stay.", {"count": float(count)})
        filtered = x[mask]
        step(ctx, "index", "Keep the rows that passed, in their original order.",
             filtered=filtered)
        return {"tensor": filtered, "mask": mask, "count": count}

    @staticmethod
    def _column(params, columns, width: int) -> tuple[int, str]:
        name = params["column_name"].strip()
        if name:
            if columns is None or len(columns) == 0:
                raise NodeError("FilterRows: 'column_name' is set but no 'columns' input is wired; "
                                "wire the table's column names, or clear 'column_name' and use "
                                "'column_index'")
            names = [str(c) for c in columns]
            if name not in names:
                raise NodeError(f"FilterRows: no column named '{name}'; the columns are "
                                f"{', '.join(names)}")
            return names.index(name), name
        if params["column_index"] >= width:
            raise NodeError(f"FilterRows: 'column_index' = {params['column_index']} is out of range "
                            f"for a table with {width} columns; use 0 to {width - 1}")
        return params["column_index"], ""
