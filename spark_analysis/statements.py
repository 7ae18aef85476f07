"""The SQL of the analyses: how a family or view becomes one ``spark.sql`` statement.

Design note (split out of ``analyses``, issue 48's thousand-line rule): every family and view
of ``spark_analysis`` is text, a list of common table expressions (``Cte``) and a final
``SELECT``, and this module is the one place that turns such text into a DataFrame
(``_query``) and holds the tokens the texts share (``$K``, ``$VALID``, ``$MISSING``, ...).
The modules of the families (``final_logs``, ``passes``, ``side_families``) and the views of
``analyses`` build on it; it knows no anomaly.

Each family and view is one SQL statement (``_query``: common table expressions, one per
step, then a ``SELECT``) over the DataFrames it reads, passed as PySpark's formatter passes
them (a temporary view for the statement, dropped once it is analysed; under Spark Connect
the plan itself). Building one is a handful of Py4J calls: through the DataFrame API it was
one or more per column, function and operator (about 27,000 for one analysis of ``make
demo``'s trace, 0.6–1.4 ms each) and every ``select``/``where`` analysed eagerly. The
statements keep the DataFrame API's plans (``tests/spark/test_analysis_families.py`` holds
the two passes to their scans and no shuffle) and its columns, types and nullability, so
the Parquet outputs are unchanged. Lambda variables keep the names written in the text, so
an analysis built again generates the same Java source (PySpark's own lambdas were named
afresh, ``x_3`` then ``x_11``, which made every analysis compile those classes again).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from spark_analysis.load import SCENARIO_SCHEMA
from traces.checker import CONSUMER_NODE_PREFIX, ISR_CHURN_WINDOW_US, MISSING

#: The partition key: ``tid`` is the trace's id in the load (``Loaded.named`` turns it back
#: into the path in every view).
K: Final = ["tid", "topic", "partition"]



#: One common table expression: (name, body). A statement is a list of them and a final
#: ``SELECT`` (``_query``); the helpers below return the expressions a view needs, so a view
#: is one ``spark.sql`` call whichever others it builds on.
Cte = tuple[str, str]

#: Tokens the SQL texts use for the constants they share (``_expand``).
_TOKENS: Final = {
    "$K": "tid, topic, `partition`",
    "$VALID": "topic IS NOT NULL AND `partition` IS NOT NULL",
    # null is the MISSING sentinel (as the checker keys a record value); SQL's \\u escape
    "$MISSING": "'" + "".join(f"\\u{ord(c):04x}" for c in MISSING) + "'",
    # acks as a code: 0 for "0", 2 for "all" (null and "-1" are "all": Kafka's default since
    # 3.0), 1 otherwise
    "$ACKS_CODE": ("CASE WHEN acks = '0' THEN 0 WHEN acks IS NULL OR acks IN ('-1', 'all') "
                   "THEN 2 ELSE 1 END"),
    "$CONSUMER_PREFIX": "'" + CONSUMER_NODE_PREFIX + "'",
    "$CONSUMER_NAME_AT": str(len(CONSUMER_NODE_PREFIX) + 1),
    "$CHURN_WINDOW_US": str(ISR_CHURN_WINDOW_US),
}
#: ``$ZERO(column, type)``: ``_zero``.
_ZERO_RE: Final = re.compile(r"\$ZERO\(([^(),]+), ([a-z]+)\)")
_TOKEN_RE: Final = re.compile("|".join(re.escape(t) for t in sorted(_TOKENS, key=len,
                                                                    reverse=True)))


def _expand(text: str) -> str:
    text = _ZERO_RE.sub(lambda m: _zero(m.group(1), m.group(2)), text)
    return _TOKEN_RE.sub(lambda m: _TOKENS[m.group(0)], text)


def _query(spark: SparkSession, ctes: Sequence[Cte], select: str,
           **frames: DataFrame) -> DataFrame:
    """One ``spark.sql`` statement: ``WITH`` the expressions (each once, in order of first
    appearance), then ``select``. ``{name}`` in the text is the DataFrame ``frames[name]``
    (PySpark's formatter: a temporary view for the statement, dropped after it is analysed;
    under Spark Connect the plan itself). A handful of Py4J calls, against one or more per
    column, function and operator built through the DataFrame API (about 1 ms each here, and
    each ``select``/``where`` analysed eagerly: ``docs/performance.md``)."""
    seen: dict[str, str] = {}
    for name, body in ctes:
        if seen.setdefault(name, body) != body:
            raise ValueError(f"two common table expressions named {name}")
    text = ",\n".join(f"{name} AS ({body})" for name, body in seen.items())
    return spark.sql(_expand((f"WITH {text}\n" if text else "") + select), None, **frames)


def _long_counts(source: str, names: Sequence[str]) -> str:
    """A ``SELECT`` of (K, anomaly, n) from ``source`` (K, one column per name), for the names
    with n > 0."""
    keys = ", ".join(f"'{n}'" for n in names)
    counts = ", ".join(f"CAST({n} AS bigint)" for n in names)
    return (f"SELECT * FROM (SELECT $K, explode(map_from_arrays(array({keys}), "
            f"array({counts}))) AS (anomaly, n) FROM {source}) WHERE n > 0")


def _zero(column: str, sql_type: str = "bigint") -> str:
    """``column`` with 0 where null, as ``DataFrame.na.fill(0)`` writes it: nullable in the
    DataFrame's schema (a ``try_cast`` from text may be null) and required in a Parquet file written
    from it (the optimizer folds the cast into a literal), so the outputs keep their
    schemas."""
    return f"coalesce({column}, try_cast('0' AS {sql_type}))"


def _count(source: str, name: str) -> str:
    """A ``SELECT`` of (K, anomaly, n): ``source``'s rows per partition."""
    return f"SELECT $K, '{name}' AS anomaly, count(1) AS n FROM {source} GROUP BY $K"



def _ddl(t: T.DataType) -> str:
    """A type as SQL writes it, field names quoted (``min.insync.replicas``)."""
    if isinstance(t, T.StructType):
        return "struct<" + ", ".join(f"`{f.name}`: {_ddl(f.dataType)}" for f in t.fields) + ">"
    if isinstance(t, T.ArrayType):
        return f"array<{_ddl(t.elementType)}>"
    if isinstance(t, T.MapType):
        return f"map<{_ddl(t.keyType)}, {_ddl(t.valueType)}>"
    return t.simpleString()


_SCENARIO: Final = f"from_json(scenario, '{_ddl(SCENARIO_SCHEMA)}')"
