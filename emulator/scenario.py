"""Scenario files: TOML with Kafka's own config names, validated, defaults filled in.

A scenario names the cluster (brokers and their ``replica.*`` / ``log.*`` settings), the
topics (``replication.factor``, ``min.insync.replicas``, ...), the network, the clients,
the faults and what the run is expected to show (``[expect]``). Every default is Kafka's
default *for the selected protocol era* (``unclean.leader.election.enable`` was true
before 0.11, ``replica.lag.time.max.ms`` was 10 s before 2.5), and the resolved scenario —
every key, defaults included — is written into the trace header, so a trace says exactly
what ran.

Bad input never gets past :func:`load`: an unknown key, a wrong type or an impossible
value raises :class:`ScenarioError`, whose one-line message names the file, the line
(found by looking the key up in the source text) and the field. ``--set KEY=VALUE``
overrides go through the same checks.
"""

from __future__ import annotations

import copy
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from actors.eras import BUGS, FIXES, KRAFT_ERAS, QUORUM_BUGS, rules_for
from emulator.files import FileRefused, input_file
from emulator.scenario_keys import (
    _SECTION,
    ADMIN,
    CATALOG,
    CLUSTER,
    CONSUMER,
    DEFAULT_QUORUM_VOTERS,
    DELAY,
    EXPECT,
    EXPLORE,
    FAULT,
    FAULT_TABLES,
    FAULTS,
    LONG_MAX_VALUE,
    NETWORK,
    PRODUCER,
    SECTIONS,
    TOP,
    TOPIC,
    Key,
)
from emulator.tcp import tcp_config
from traces.schema import ANOMALIES, DEFAULT_FORBID, QUORUM_FORBID

#: a scenario name that can be a folder under out/ (no path separators, no ".."): the
#: default output of run and campaign is named after it
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


class ScenarioError(Exception):
    def __init__(self, file: str, field: str, message: str, line: int | None = None) -> None:
        self.file = file
        self.field = field
        self.line = line
        self.message = message
        # all the arguments: raised in a worker process (regress, campaigns) it pickles back
        super().__init__(file, field, message, line)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}"


class _Source:
    """Finds the line of a key in the scenario text (tomllib keeps no positions)."""

    def __init__(self, file: str, text: str, overrides: dict[str, str] | None = None) -> None:
        self.file = file
        self.lines = text.splitlines()
        #: field path -> the ``--set`` item that gave it its value
        self.overrides = overrides or {}

    def line_of(self, key: str) -> int | None:
        pat = re.compile(r'^\s*"?' + re.escape(key) + r'"?\s*=')
        for i, line in enumerate(self.lines, 1):
            if pat.search(line):
                return i
        return None

    def line_in_element(self, header: str, index: int, key: str) -> int | None:
        """The line of ``key`` inside the ``index``-th ``[[header]]`` table (0-based)."""
        seen = -1
        inside = False
        pat = re.compile(r'^\s*"?' + re.escape(key) + r'"?\s*=')
        for i, line in enumerate(self.lines, 1):
            stripped = line.strip()
            if stripped.startswith("["):
                if stripped == f"[[{header}]]":
                    seen += 1
                    inside = seen == index
                else:
                    inside = False
                continue
            if inside and pat.search(line):
                return i
        return None

    def error(self, path: str, message: str) -> ScenarioError:
        for given, item in self.overrides.items():
            if path == given or path.startswith((given + ".", given + "[")):
                # the value came from the command line (a whole array too: producers=[...],
                # faults.plan=[...]): blame the --set, not a file line
                return ScenarioError(f"--set {_short(item)}", path, message)
        m = re.match(r"^(topics|producers|consumers|admin|faults\.plan)\[(\d+)\]\.(.+)$", path)
        if m:
            # an element of an array of tables: look inside that element, not at the first
            # line anywhere that sets a key of that name
            key = m.group(3)
            return ScenarioError(self.file, path, message,
                                 self.line_in_element(m.group(1), int(m.group(2)), key))
        key = re.sub(rf"^{_SECTION}(\[\d+\])?\.", "", path)
        key = re.sub(r"^(delay|plan\[\d+\])\.", "", key)
        return ScenarioError(self.file, path, message, self.line_of(key))


def _check_table(src: _Source, where: str, table: Any, spec: dict[str, Key]
                 ) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise src.error(where, "must be a table")
    out: dict[str, Any] = {}
    for key in table:
        if key not in spec:
            raise src.error(f"{where}.{key}" if where else key,
                            f"unknown key (known: {', '.join(sorted(spec))})")
    for key, k in spec.items():
        path = f"{where}.{key}" if where else key
        if key in table:
            v = table[key]
            if isinstance(v, bool) and bool not in k.types:
                raise src.error(path, f"expected {_type_names(k.types)}, got a boolean")
            if not isinstance(v, k.types):
                raise src.error(path, f"expected {_type_names(k.types)}, got {type(v).__name__}")
            if isinstance(v, float) and not math.isfinite(v):
                raise src.error(path, f"must be a finite number (got {v!r})")
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > LONG_MAX_VALUE:
                raise src.error(path, f"must fit in a signed 64-bit integer (got {v!r})")
            if k.check is not None:
                problem = k.check(v)
                if problem:
                    raise src.error(path, f"{problem} (got {v!r})")
            out[key] = v
        elif k.default is not None or k.derived:
            out[key] = copy.deepcopy(k.default)
        else:
            raise src.error(path, "is required")
    return out


def _type_names(types: tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "a boolean",
             list: "an array", dict: "a table"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def resolve(raw: dict[str, Any], file: str, text: str = "",
            overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """Validate a parsed scenario and fill in every default. Raises ScenarioError."""
    src = _Source(file, text, overrides)
    top = {k: v for k, v in raw.items() if k not in SECTIONS}
    sc = _check_table(src, "", top, TOP)
    for bug in sc["bugs"]:
        if bug not in BUGS:
            raise src.error("bugs", f"unknown bug {bug!r} (known: {', '.join(sorted(BUGS))})")
    for fix in sc["fixes"]:
        if fix not in FIXES:
            raise src.error("fixes", f"unknown fix {fix!r} (known: {', '.join(sorted(FIXES))})")
    rules = rules_for(sc["protocol"], tuple(sc["bugs"]), tuple(sc["fixes"]))

    cluster = _check_table(src, "cluster", raw.get("cluster", {}), CLUSTER)
    if cluster["replica.lag.time.max.ms"] is None:
        cluster["replica.lag.time.max.ms"] = rules.lag_time_default_ms
    # KafkaConfig.validateValues (0.10+): the broker refuses to start otherwise
    for other in ("replica.socket.timeout.ms", "replica.lag.time.max.ms"):
        if cluster["replica.fetch.wait.max.ms"] > cluster[other]:
            raise src.error("cluster.replica.fetch.wait.max.ms",
                            f"{cluster['replica.fetch.wait.max.ms']} is above {other} "
                            f"({cluster[other]}): Kafka's broker refuses this configuration")
    if cluster["offsets.topic.replication.factor"] is None:
        cluster["offsets.topic.replication.factor"] = min(3, cluster["brokers"])
    elif cluster["offsets.topic.replication.factor"] > cluster["brokers"]:
        raise src.error("cluster.offsets.topic.replication.factor",
                        f"{cluster['offsets.topic.replication.factor']} is above the broker "
                        f"count ({cluster['brokers']}): Kafka cannot create __consumer_offsets")
    if cluster["controller_quorum"] is None:
        # KRaft runs its controllers as a Raft quorum: three voters unless the scenario says
        # otherwise (issue 52; 0 keeps the single controller node); ZooKeeper's eras have none
        cluster["controller_quorum"] = (DEFAULT_QUORUM_VOTERS if sc["protocol"] in KRAFT_ERAS
                                        else 0)
    if cluster["controller_quorum"] == 0:
        del cluster["controller_quorum"]
        quorum_bugs = [b for b in sc["bugs"] if b in QUORUM_BUGS]
        if quorum_bugs:
            raise src.error("bugs", f"{quorum_bugs[0]} is a bug of the KRaft controller "
                            f"quorum: it needs cluster.controller_quorum (e.g. 3)")
    elif sc["protocol"] not in KRAFT_ERAS:
        raise src.error("cluster.controller_quorum", f"a controller quorum is KRaft's: the "
                        f"{sc['protocol']} era's controller is ZooKeeper's")
    sc["cluster"] = cluster

    topics_raw = raw.get("topics", [{}])
    if not isinstance(topics_raw, list) or not topics_raw:
        raise src.error("topics", "must be a non-empty array of tables ([[topics]])")
    topics: list[dict[str, Any]] = []
    for i, t in enumerate(topics_raw):
        topic = _check_table(src, f"topics[{i}]", t, TOPIC)
        if topic["unclean.leader.election.enable"] is None:
            topic["unclean.leader.election.enable"] = rules.unclean_default
        if topic["replication.factor"] > cluster["brokers"]:
            raise src.error(f"topics[{i}].replication.factor",
                            f"{topic['replication.factor']} is above the broker count "
                            f"({cluster['brokers']})")
        if topic["min.insync.replicas"] > topic["replication.factor"]:
            raise src.error(f"topics[{i}].min.insync.replicas",
                            f"{topic['min.insync.replicas']} is above the replication factor "
                            f"({topic['replication.factor']})")
        _check_topic_name(src, f"topics[{i}].name", topic["name"])
        for j, prev in enumerate(topics):
            if prev["name"] == topic["name"]:
                raise src.error(f"topics[{i}].name", f"{topic['name']!r} is also the name of "
                                f"topics[{j}]: topic names must be unique")
            if prev["name"].replace(".", "_") == topic["name"].replace(".", "_"):
                raise src.error(f"topics[{i}].name", f"{topic['name']!r} collides with "
                                f"topics[{j}].name {prev['name']!r}: '.' and '_' are the "
                                f"same in metric names (Kafka: InvalidTopicException, "
                                f"Topic.hasCollision)")
        topics.append(topic)
    names = [t["name"] for t in topics]
    sc["topics"] = topics

    net = _check_table(src, "network", raw.get("network", {}), NETWORK)
    net["delay"] = _check_table(src, "network.delay", net["delay"], DELAY)
    if net["delay"]["low_ms"] > net["delay"]["high_ms"]:
        raise src.error("network.delay.low_ms", "must not exceed high_ms")
    if net["tcp_rto_min_ms"] > net["tcp_rto_max_ms"]:
        raise src.error("network.tcp_rto_min_ms", "must not exceed tcp_rto_max_ms")
    if net["socket.connection.setup.timeout.ms"] is None:   # KIP-601: 2.7 and later
        net["socket.connection.setup.timeout.ms"] = tcp_config(net, sc["protocol"]
                                                               ).setup_timeout_ms
    sc["network"] = net

    for section in ("producers", "consumers", "admin"):
        if not isinstance(raw.get(section, []), list):
            raise src.error(section, f"must be an array of tables ([[{section}]]), got "
                                     f"{type(raw[section]).__name__}")
    producers = []
    for i, p in enumerate(raw.get("producers", [])):
        prod = _check_table(src, f"producers[{i}]", p, PRODUCER)
        if prod["acks"] == "-1":
            prod["acks"] = "all"
        if prod["topic"] not in names:
            raise src.error(f"producers[{i}].topic", f"unknown topic {prod['topic']!r}")
        if prod["enable.idempotence"] and prod["acks"] != "all":
            raise src.error(f"producers[{i}].enable.idempotence",
                            "idempotence requires acks = \"all\" (Kafka: ConfigException)")
        if prod["enable.idempotence"] and prod["max.in.flight.requests.per.connection"] > 5:
            raise src.error(f"producers[{i}].max.in.flight.requests.per.connection",
                            "must be <= 5 with idempotence")
        floor = prod["linger.ms"] + prod["request.timeout.ms"]
        if prod["delivery.timeout.ms"] < floor:
            # KafkaProducer.configureDeliveryTimeout (2.1+, KIP-91): an explicit value is a
            # ConfigException; the default is raised to linger.ms + request.timeout.ms
            if isinstance(p, dict) and "delivery.timeout.ms" in p:
                raise src.error(f"producers[{i}].delivery.timeout.ms",
                                f"should be equal to or larger than linger.ms + "
                                f"request.timeout.ms ({floor}) (Kafka: ConfigException)")
            prod["delivery.timeout.ms"] = floor
        producers.append(prod)
    sc["producers"] = producers

    consumers = []
    for i, c in enumerate(raw.get("consumers", [])):
        con = _check_table(src, f"consumers[{i}]", c, CONSUMER)
        if con["topic"] not in names:
            raise src.error(f"consumers[{i}].topic", f"unknown topic {con['topic']!r}")
        if con["heartbeat.interval.ms"] >= con["session.timeout.ms"]:
            # consumer internals Heartbeat: IllegalArgumentException
            raise src.error(f"consumers[{i}].heartbeat.interval.ms",
                            f"must be lower than session.timeout.ms "
                            f"({con['session.timeout.ms']}) (Kafka: \"Heartbeat must be set "
                            f"lower than the session timeout\")")
        consumers.append(con)
    sc["consumers"] = consumers

    faults = _check_table(src, "faults", raw.get("faults", {}), FAULTS)
    plan = []
    from faults.plan import FAULT_KINDS, NEMESES, QUORUM_NEMESES
    for i, f in enumerate(faults["plan"]):
        fe = _check_table(src, f"faults.plan[{i}]", f, FAULT_TABLES.get(
            str(f.get("fault")), FAULT) if isinstance(f, dict) else FAULT)
        if fe["fault"] not in FAULT_KINDS:
            raise src.error(f"faults.plan[{i}].fault",
                            f"unknown fault {fe['fault']!r} (known: {', '.join(FAULT_KINDS)})")
        plan.append(fe)
    faults["plan"] = plan
    for n in faults["nemesis"]:
        if n not in NEMESES:
            raise src.error("faults.nemesis",
                            f"unknown nemesis {n!r} (known: {', '.join(NEMESES)})")
        if n in QUORUM_NEMESES and "controller_quorum" not in cluster:
            raise src.error("faults.nemesis", f"{n!r} acts on a controller quorum: it needs "
                            f"cluster.controller_quorum (e.g. 3)")
    sc["faults"] = faults

    expect = _check_table(src, "expect", raw.get("expect", {}), EXPECT)
    if expect["forbid"] is None:
        expect["forbid"] = [a for a in (*DEFAULT_FORBID, *(
            QUORUM_FORBID if "controller_quorum" in cluster else ()))
            if a not in expect["anomalies"]]
    elif "controller_quorum" in cluster:
        # a quorum's own safety (Raft's) is forbidden even where a scenario written for the
        # single controller lists what it forbids (safe-acks-all run with a quorum), unless
        # the scenario expects it
        expect["forbid"] = [*expect["forbid"], *(
            a for a in QUORUM_FORBID
            if a not in expect["forbid"] and a not in expect["anomalies"])]
    for key in ("anomalies", "forbid"):
        for a in expect[key]:
            if a not in ANOMALIES:
                raise src.error(f"expect.{key}", f"unknown anomaly {a!r}")
    sc["expect"] = expect
    sc["catalog"] = _check_table(src, "catalog", raw.get("catalog", {}), CATALOG)
    admin = []
    for i, a in enumerate(raw.get("admin", [])):
        act = _check_table(src, f"admin[{i}]", a, ADMIN)
        matching = [t for t in topics if t["name"] == act["topic"]]
        if not matching:
            raise src.error(f"admin[{i}].topic", f"unknown topic {act['topic']!r}")
        if act["partition"] >= matching[0]["partitions"]:
            raise src.error(f"admin[{i}].partition", f"topic {act['topic']!r} has "
                            f"{matching[0]['partitions']} partitions")
        admin.append(act)
    sc["admin"] = admin
    if "explore" in raw:
        sc["explore"] = _check_explore(src, raw["explore"], sc)
    for i, fe in enumerate(plan):
        _check_target(src, f"faults.plan[{i}]", fe, sc)
        if fe["at_s"] >= sc["duration_s"] + sc["heal_s"]:
            raise src.error(f"faults.plan[{i}].at_s",
                            f"{fe['at_s']} is after the end of the run (duration_s + heal_s "
                            f"= {sc['duration_s'] + sc['heal_s']}): it can never act")
        targets = fe["target"] if isinstance(fe["target"], list) else [fe["target"]]
        if fe["fault"] == "cut" and len(targets) != 2:
            raise src.error(f"faults.plan[{i}].target",
                            f"a cut needs two nodes, [from, to] (got {len(targets)})")
        if fe["fault"] == "cut" and targets[0] == targets[1]:
            raise src.error(f"faults.plan[{i}].target",
                            f"a cut between {targets[0]} and itself cuts nothing")
    _check_decommissions(src, sc)
    return sc


#: Kafka's internal topics (``org.apache.kafka.common.internals.Topic``: the group and
#: transaction coordinators' topics, the share-group state topic, KRaft's metadata log)
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state",
                   "__cluster_metadata")
#: ``Topic.MAX_NAME_LENGTH``
MAX_TOPIC_NAME = 249
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")


def _check_topic_name(src: _Source, field: str, name: str) -> None:
    """Kafka's ``Topic.validate`` (InvalidTopicException), and no internal topic."""
    if name == "":
        raise src.error(field, "Topic name is illegal, it can't be empty (Kafka: "
                        "InvalidTopicException)")
    if name in (".", ".."):
        raise src.error(field, "Topic name cannot be \".\" or \"..\" (Kafka: "
                        "InvalidTopicException)")
    if len(name) > MAX_TOPIC_NAME:
        raise src.error(field, f"Topic name is illegal, it can't be longer than "
                        f"{MAX_TOPIC_NAME} characters (got {len(name)}; Kafka: "
                        f"InvalidTopicException)")
    if not _TOPIC_CHARS.fullmatch(name):
        raise src.error(field, f"Topic name {_short(name, 60)!r} is illegal, it contains a "
                        f"character other than ASCII alphanumerics, '.', '_' and '-' (Kafka: "
                        f"InvalidTopicException)")
    if name in INTERNAL_TOPICS:
        raise src.error(field, f"{name!r} is one of Kafka's internal topics "
                        f"(Topic.isInternal): the cluster creates and owns it; give a topic "
                        f"of your own another name")


def _check_decommissions(src: _Source, sc: dict[str, Any]) -> None:
    """A ``decommission`` step of the plan needs somewhere to move its broker's replicas:
    at its time, the brokers that remain (the cluster's, plus spares an ``add_broker``
    step started by then, minus those decommissioned before and the broker itself) must
    be at least as many as the replication factor of every topic then (the
    ``__consumer_offsets`` topic's too when there are consumer groups, and a
    reassignment's replica count). With fewer, ``kafka-reassign-partitions --generate``
    refuses ("Replication factor: 3 larger than available brokers: 2",
    InvalidReplicationFactorException), and the broker could never leave.

    This is exact for the plan as written: a broker that hosts no replica of a topic has
    that topic's replicas all on the others, so they are at least its replication factor.
    Brokers down (fenced) at that time are the run's business: the decommission is then
    traced as rejected (``emulator.cluster``)."""
    plan = sc["faults"]["plan"]
    order = sorted(range(len(plan)), key=lambda i: float(plan[i]["at_s"]))   # as the run
    if not any(plan[i]["fault"] == "decommission" for i in order):
        return
    live = set(range(1, sc["cluster"]["brokers"] + 1))
    for i in order:
        fe = plan[i]
        at = float(fe["at_s"])
        targets = fe["target"] if isinstance(fe["target"], list) else [fe["target"]]
        ids = [int(t[7:]) for t in targets if isinstance(t, str) and t.startswith("broker-")]
        if fe["fault"] == "add_broker":
            live.update(ids)
            continue
        if fe["fault"] != "decommission":
            continue
        needs = _replication_factors(sc, at)
        for b in ids:
            if b not in live:
                continue   # not in the cluster then: the step does nothing to it
            others = sorted(live - {b})
            worst = max(needs, key=lambda n: n[0])
            if len(others) < worst[0]:
                raise src.error(
                    f"faults.plan[{i}].target",
                    f"broker-{b} cannot be decommissioned at {at:g} s: its replicas would "
                    f"have nowhere to go - {len(others)} broker(s) remain "
                    f"({', '.join(map(str, others)) or 'none'}) for a replication factor of "
                    f"{worst[0]} ({worst[1]}); kafka-reassign-partitions refuses such a plan "
                    f"(\"Replication factor: {worst[0]} larger than available brokers: "
                    f"{len(others)}\"): add a spare broker first or lower the factor")
            live.discard(b)


def _replication_factors(sc: dict[str, Any], at: float) -> list[tuple[int, str]]:
    """(replication factor, what has it) of every topic and moved partition at ``at``."""
    plan = sc["faults"]["plan"]
    created = {fe["target"] for fe in plan
               if fe["fault"] == "create_topic" and float(fe["at_s"]) <= at}
    out = [(t["replication.factor"], f"topic {t['name']!r}") for t in sc["topics"]
           if t["create_at_start"] or t["name"] in created]
    if sc["consumers"]:
        out.append((sc["cluster"]["offsets.topic.replication.factor"],
                    "__consumer_offsets, offsets.topic.replication.factor"))
    for fe in plan:
        if (fe["fault"] == "reassign" and float(fe["at_s"]) <= at
                and not (fe["duration_s"] > 0 and fe["at_s"] + fe["duration_s"] <= at)):
            targets = fe["target"] if isinstance(fe["target"], list) else [fe["target"]]
            cancelled = any(c["fault"] == "cancel_reassign"
                            and float(fe["at_s"]) <= float(c["at_s"]) <= at
                            and set(c["target"] if isinstance(c["target"], list)
                                    else [c["target"]]) & set(targets) for c in plan)
            if not cancelled:
                out.append((len(fe["replicas"]), f"the reassignment of {', '.join(targets)}"))
    return out or [(0, "no topic")]


def _check_explore(src: _Source, table: Any, sc: dict[str, Any]) -> dict[str, Any]:
    from emulator.choice import parse_fault

    choices = table.pop("choices", None) if isinstance(table, dict) else None
    ex = _check_table(src, "explore", table, EXPLORE)
    nodes = {"controller", *(f"broker-{b}" for b in range(1, sc["cluster"]["brokers"] + 1)),
             *(f"controller-{3000 + i}" for i in range(sc["cluster"].get("controller_quorum", 0)))}
    parts = _partition_names(sc)
    for i, text in enumerate(ex["faults"]):
        try:
            _kind, targets, _duration = parse_fault(text)
        except ValueError as exc:
            raise src.error(f"explore.faults[{i}]", str(exc)) from None
        for t in targets:
            if t.startswith("leader:") and t[7:] in parts:
                continue
            if t not in nodes:
                raise src.error(f"explore.faults[{i}]",
                                f"unknown target {t!r} (a broker, controller, a "
                                f"quorum's controller-300N, or leader:<topic>-<p>)")
    if choices is not None:
        if not isinstance(choices, list):
            raise src.error("explore.choices", "must be an array of tables")
        for i, c in enumerate(choices):
            if (not isinstance(c, dict) or set(c) - {"point", "option", "label"}
                    or not isinstance(c.get("point"), int) or c["point"] < 0
                    or not isinstance(c.get("option"), int) or c["option"] < 1
                    or not isinstance(c.get("label", ""), str)):
                raise src.error(f"explore.choices[{i}]",
                                "must be a table {point = P >= 0, option = K >= 1, "
                                "label = \"...\"}")
        points = [c["point"] for c in choices]
        if points != sorted(set(points)):
            raise src.error("explore.choices", "points must be increasing, each once")
        ex["choices"] = choices
    return ex


def _partition_names(sc: dict[str, Any]) -> set[str]:
    """Every partition a plan step may name: the topics' partitions (of topics created by a
    step too), and those an add_partitions step adds."""
    counts = {t["name"]: t["partitions"] for t in sc["topics"]}
    for fe in sc["faults"]["plan"]:
        if fe["fault"] == "add_partitions" and fe["target"] in counts:
            counts[fe["target"]] = max(counts[fe["target"]], fe["partitions"])
    return {f"{t}-{p}" for t, n in counts.items() for p in range(n)}


def _check_topic_step(src: _Source, where: str, fe: dict[str, Any], sc: dict[str, Any]
                      ) -> None:
    """A create_topic / add_partitions step names one topic of ``[[topics]]``; create_topic
    one with ``create_at_start = false`` (its partition count and configs come from there);
    add_partitions a new count above the topic's (Kafka: INVALID_PARTITIONS otherwise)."""
    topics = {t["name"]: t for t in sc["topics"]}
    name = fe["target"]
    if not isinstance(name, str) or name not in topics:
        raise src.error(f"{where}.target", f"a {fe['fault']!r} step names one topic of "
                        f"[[topics]] ({', '.join(sorted(topics))}), got {name!r}")
    t = topics[name]
    if fe["fault"] == "create_topic":
        if t["create_at_start"]:
            raise src.error(f"{where}.target", f"topic {name!r} exists from the start: a "
                            f"create_topic names a topic with create_at_start = false")
        if fe["partitions"]:
            raise src.error(f"{where}.partitions", "a create_topic takes its partition count "
                            "from the topic's [[topics]] entry")
        return
    if fe["partitions"] <= t["partitions"]:
        raise src.error(f"{where}.partitions", f"must be above the topic's {t['partitions']} "
                        f"partition(s): kafka-topics --alter --partitions only increases "
                        f"(Kafka: INVALID_PARTITIONS)")


def _check_target(src: _Source, where: str, fe: dict[str, Any], sc: dict[str, Any]) -> None:
    """A plan entry's target names nodes of this scenario: ``controller``, ``broker-N``,
    ``admin``, a producer's or a consumer's node, ``leader:<topic>-<p>`` or
    ``follower:<topic>-<p>[/k]`` of an existing partition; every fault but ``heal`` needs
    one (a fault on a node that does not exist would silently do nothing)."""
    targets = fe["target"] if isinstance(fe["target"], list) else [fe["target"]]
    targets = [t for t in targets if t != ""]
    if fe["fault"] in ("heal", "preferred_election"):
        if fe["fault"] == "preferred_election":   # partitions, not nodes ("" or "all": every)
            names = _partition_names(sc)
            for t in targets:
                if t != "all" and t not in names:
                    raise src.error(f"{where}.target", f"{t!r}: no partition of that name "
                                    f"(a preferred_election names partitions, or \"all\")")
        return
    if fe["fault"] in ("reassign", "cancel_reassign"):
        _check_reassign(src, where, fe, sc, targets)
        return
    if fe["fault"] in ("create_topic", "add_partitions"):
        _check_topic_step(src, where, fe, sc)
        return
    from faults.plan import QUORUM_FAULTS
    quorum = sc["cluster"].get("controller_quorum", 0)
    if fe["fault"] in QUORUM_FAULTS:
        _check_quorum_fault(src, where, fe, quorum, targets)
        return
    if not targets:
        raise src.error(f"{where}.target", f"a {fe['fault']!r} fault needs a target")
    voter = next((t for t in targets if isinstance(t, str) and t.startswith("controller-")),
                 None)
    if voter is not None and not quorum:
        raise src.error(f"{where}.target", f"{voter!r} is a voter of a controller quorum: "
                        f"the scenario has none (cluster.controller_quorum)")
    every = sc["cluster"]["brokers"] + sc["cluster"]["spare.brokers"]
    nodes = {"controller", *(f"broker-{b}" for b in range(1, every + 1)),
             *(producer_node(i) for i in range(len(sc["producers"])))}
    nodes |= {f"controller-{3000 + i}"
              for i in range(sc["cluster"].get("controller_quorum", 0))}
    nodes |= {consumer_node(c["group"], m) for c in sc["consumers"] for m in range(c["members"])}
    if sc["admin"]:
        nodes.add("admin")
    partitions = _partition_names(sc)
    nodes |= {f"coordinator:{c['group']}" for c in sc["consumers"]}
    _check_names(src, f"{where}.target", targets, nodes, partitions)
    brokers = {n for n in nodes if n.startswith("broker-")}
    if fe["fault"] in ("add_broker", "decommission", "stall_fetcher", "corrupt_disk"):
        _check_names(src, f"{where}.target", targets, brokers,
                     set() if fe["fault"] in ("add_broker", "decommission") else partitions)
    if fe["fault"] == "add_broker":
        spares = {f"broker-{b}" for b in range(sc["cluster"]["brokers"] + 1, every + 1)}
        for t in targets:
            if t not in spares:
                raise src.error(f"{where}.target", f"{t!r} is not a spare broker (an "
                                f"add_broker starts one of cluster.spare.brokers: "
                                f"{', '.join(sorted(spares)) or 'none'})")
    if fe["fault"] == "corrupt_disk" and fe["topic_partition"] not in partitions:
        raise src.error(f"{where}.topic_partition", f"no partition {fe['topic_partition']!r}")
    if fe["fault"] == "stall_fetcher":
        sources = fe["source"] if isinstance(fe["source"], list) else [fe["source"]]
        _check_names(src, f"{where}.source", [s for s in sources if s != ""], brokers,
                     partitions)
        n = sc["cluster"]["num.replica.fetchers"]
        if not -1 <= fe["fetcher_id"] < n:
            raise src.error(f"{where}.fetcher_id", f"{fe['fetcher_id']} is not a fetcher id "
                            f"(0..{n - 1} with num.replica.fetchers = {n}, or -1 for all)")


def _check_quorum_fault(src: _Source, where: str, fe: dict[str, Any], quorum: int,
                        targets: list[Any]) -> None:
    """``isolate_controller``: one node, "controller" (the active one; the default) or a
    voter; ``lose_quorum``: no target (a majority chosen when it starts) or at least a
    majority of distinct voters. Both need a controller quorum."""
    kind = fe["fault"]
    if not quorum:
        raise src.error(f"{where}.fault", f"{kind!r} acts on a controller quorum: it needs "
                        f"cluster.controller_quorum (e.g. 3)")
    voters = [f"controller-{3000 + i}" for i in range(quorum)]
    for t in targets:
        if t not in voters and not (kind == "isolate_controller" and t == "controller"):
            raise src.error(f"{where}.target", f"{t!r} is not a voter (known: "
                            f"{', '.join(voters)}"
                            f"{', controller' if kind == 'isolate_controller' else ''})")
    if kind == "isolate_controller" and len(targets) > 1:
        raise src.error(f"{where}.target", "an isolate_controller cuts one controller node "
                        "(\"controller\": the active one, or a voter)")
    if kind == "lose_quorum" and targets and (
            len(set(targets)) != len(targets) or len(targets) < quorum // 2 + 1):
        raise src.error(f"{where}.target", f"a lose_quorum takes a majority of the "
                        f"{quorum} voters ({quorum // 2 + 1} distinct), or none to let it "
                        f"choose")


def _check_reassign(src: _Source, where: str, fe: dict[str, Any], sc: dict[str, Any],
                    targets: list[Any]) -> None:
    """A reassign / cancel_reassign step names partitions of the scenario's topics; a
    reassignment's ``replicas`` are distinct broker ids of the cluster; cancelling needs
    KIP-455 (Kafka 2.4+)."""
    names = _partition_names(sc)
    if not targets:
        raise src.error(f"{where}.target", f"a {fe['fault']!r} step names the partitions it "
                        f"moves (\"orders-0\" or a list)")
    for t in targets:
        if t not in names:
            raise src.error(f"{where}.target", f"{t!r}: no partition of that name")
    cancels = fe["fault"] == "cancel_reassign" or fe["duration_s"] > 0
    if cancels and not rules_for(sc["protocol"], ()).reassignment_cancel:
        raise src.error(f"{where}.{'fault' if fe['fault'] == 'cancel_reassign' else 'duration_s'}",
                        f"protocol {sc['protocol']} cannot cancel a reassignment "
                        f"(AlterPartitionReassignments, KIP-455, is Kafka 2.4+)")
    if fe["fault"] == "cancel_reassign":
        if fe["replicas"]:
            raise src.error(f"{where}.replicas", "a cancel_reassign takes no replicas")
        return
    brokers = sc["cluster"]["brokers"] + sc["cluster"]["spare.brokers"]
    reps = fe["replicas"]
    if not reps:
        raise src.error(f"{where}.replicas", "a reassign needs the target replicas, e.g. "
                        "replicas = [4, 5, 6]")
    for b in reps:
        if type(b) is not int or not 1 <= b <= brokers:
            raise src.error(f"{where}.replicas", f"{b!r} is not a broker id (1..{brokers})")
    if len(set(reps)) != len(reps):
        raise src.error(f"{where}.replicas", f"duplicate broker ids in {reps}")


def _check_names(src: _Source, field: str, names: list[Any], nodes: set[str],
                 partitions: set[str]) -> None:
    for t in names:
        if not isinstance(t, str):
            raise src.error(field, f"expected a node name, got {t!r}")
        role, colon, rest = t.partition(":")
        if colon and role in ("leader", "follower"):
            tp, slash, k = rest.partition("/")
            if tp not in partitions:
                raise src.error(field, f"{t!r}: no partition {tp!r}")
            if slash and (role == "leader" or not k.isdigit()):
                raise src.error(field,
                                f"{t!r}: only follower:<topic>-<p>/<k> takes a replica index")
        elif t not in nodes:
            raise src.error(field, f"unknown node {t!r} (known: "
                            f"{', '.join(sorted(nodes))}, leader:<topic>-<p>, "
                            f"follower:<topic>-<p>[/k], coordinator:<group>)")


def recorded(scenario: dict[str, Any]) -> dict[str, Any]:
    """A trace header's resolved scenario as raw input for :func:`resolve` again (replay,
    shrink): a copy where a key whose absence meant one thing when the trace was recorded and
    another today is written out. A KRaft-era header without ``cluster.controller_quorum``
    is a single-controller run (recorded before the quorum was the default, or with
    ``controller_quorum = 0``): it stays one."""
    raw = copy.deepcopy(scenario)
    cluster = raw.get("cluster")
    if (raw.get("protocol") in KRAFT_ERAS and isinstance(cluster, dict)
            and "controller_quorum" not in cluster):
        cluster["controller_quorum"] = 0
    return raw


def find(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        return p
    return SCENARIO_DIR / f"{name_or_path}.toml"


def load(name_or_path: str, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Read, override (``--set``), validate and resolve a scenario."""
    raw, file, text, given = load_raw(name_or_path, overrides)
    return resolve(raw, file, text, given)


def load_raw(name_or_path: str, overrides: list[str] | tuple[str, ...] = ()
             ) -> tuple[dict[str, Any], str, str, dict[str, str]]:
    """A scenario file as TOML data with ``--set`` applied, not yet resolved: (the data, the
    file, its text, the fields the overrides set) — what :func:`resolve` takes, for tools
    that vary a scenario before resolving it (``isrlab compare``)."""
    path = find(name_or_path)
    file = str(path)
    try:
        input_file(path)   # a FIFO would block the read, a device never end it
    except FileRefused as exc:
        if not path.exists():
            raise ScenarioError(file, "scenario", "no such scenario file or catalog entry"
                                ) from None
        raise ScenarioError(file, "scenario", str(exc).removeprefix(f"{path}: ")) from None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(file, "scenario", "no such scenario file or catalog entry"
                            ) from None
    except OSError as exc:
        raise ScenarioError(file, "scenario", f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:   # a binary file
        raise ScenarioError(file, "scenario", f"not UTF-8 text (byte {exc.start}): not a "
                                              "scenario file") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ScenarioError(file, "toml", str(exc), int(m.group(1)) if m else None) from None
    except RecursionError:
        raise ScenarioError(file, "toml", "arrays or tables nested too deeply") from None
    given: dict[str, str] = {}
    for item in overrides:
        given[apply_override(raw, item, file)] = item
    if not raw.get("name"):
        raw["name"] = path.stem
    return raw, file, text, given


def _short(item: str, most: int = 120) -> str:
    """A ``--set`` as an error line shows it: control characters (a line break) escaped, so
    the error stays one line, and a huge value cut, not echoed whole."""
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                    for c in item)
    return shown if len(shown) <= most else f"{shown[:most]}... ({len(item)} characters)"


def apply_override(raw: dict[str, Any], item: str, file: str) -> str:
    """``--set KEY=VALUE``: KEY is ``section.key`` (first array element for ``topics``,
    ``producers``, ``consumers``; ``topics[1].key`` for others) or a top-level key; VALUE is
    parsed as TOML (so ``acks="1"``, ``protocol="2.8"``, ``bugs=["KAFKA-7128"]``). Returns
    the field path it set, as validation errors name it (``producers[0].rate``)."""
    if "=" not in item:
        raise ScenarioError("--set", _short(item), "expected KEY=VALUE")
    if "\n" in item or "\r" in item:
        # TOML would read the first line as the value and the rest as other keys, dropped
        raise ScenarioError("--set", _short(item), "holds a line break: a --set is KEY=VALUE "
                                                   "on one line")
    key, _, value = item.partition("=")
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value   # a bare word: take it as a string
    except RecursionError:
        raise ScenarioError("--set", _short(item), "value nested too deeply") from None
    m = re.match(rf"^{_SECTION}(\[(\d+)\])?\.(.+)$", key)
    if m is None:
        raw[key] = parsed
        return key
    section, idx, sub = m.group(1), int(m.group(3) or 0), m.group(4)
    if section in ("topics", "producers", "consumers", "admin"):
        arr = raw.setdefault(section, [{}] if section == "topics" else [])
        if not isinstance(arr, list):
            raise ScenarioError("--set", key, f"{section} is not an array of tables "
                                              f"([[{section}]]) in {file}")
        if idx >= len(arr):
            raise ScenarioError("--set", key, f"{section} has no element {idx} in {file}")
        target = arr[idx]
        if not isinstance(target, dict):
            raise ScenarioError("--set", key, f"{section}[{idx}] is not a table in {file}")
    else:
        target = raw.setdefault(section, {})
        if not isinstance(target, dict):
            raise ScenarioError("--set", key, f"{section} is not a table (it is "
                                              f"{type(target).__name__}: an earlier --set or "
                                              f"{file} says so)")
    plan = re.match(r"^plan\[(\d+)\]\.(.+)$", sub) if section == "faults" else None
    if plan is not None:   # faults.plan[N].key: a key of one scripted fault
        steps, i = target.get("plan"), int(plan.group(1))
        if not isinstance(steps, list) or i >= len(steps) or not isinstance(steps[i], dict):
            raise ScenarioError("--set", key, f"faults.plan has no step {i} in {file}")
        steps[i][plan.group(2)] = parsed
        return f"faults.plan[{i}].{plan.group(2)}"
    if section == "network" and sub.startswith("delay."):
        delay = target.setdefault("delay", {})
        if not isinstance(delay, dict):
            raise ScenarioError("--set", key, f"network.delay is not a table (it is "
                                              f"{type(delay).__name__}: an earlier --set or "
                                              f"{file} says so)")
        delay[sub[6:]] = parsed
    else:
        target[sub] = parsed
    if section in ("topics", "producers", "consumers", "admin"):
        return f"{section}[{idx}].{sub}"
    return f"{section}.{sub}"


def producer_node(i: int) -> str:
    """The node name of the scenario's ``i``-th producer."""
    return f"producer-{i}"


def consumer_node(group: str, member: int) -> str:
    """The node name of one member of a consumer group."""
    return f"consumer-{group}-{member}"


def client_nodes(sc: dict[str, Any]) -> list[str]:
    """The node names of a resolved scenario's clients (producers, then consumers)."""
    names = [producer_node(i) for i in range(len(sc["producers"]))]
    for c in sc["consumers"]:
        names += [consumer_node(c["group"], m) for m in range(int(c["members"]))]
    return names


def catalog() -> list[tuple[str, str]]:
    """(name, description) of every scenario in ``scenarios/``."""
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):   # ValueError: TOML or UTF-8
            continue
        out.append((path.stem, str(raw.get("description", ""))))
    return out
