"""The pipeline's sizing rules as one pure function.

- Partitions: a partition is consumed by at most one member of a group, so
  partitions needed = target topic throughput ÷ throughput one consumer sustains.
- Disk: retained bytes = throughput × bytes per message × retention, stored replication-factor
  times, spread over brokers each filled to at most `max_disk_utilization`.
- Network, per direction and spread evenly over brokers: in = produce + replication into followers
  (produce × RF); out = replication out of leaders (produce × (RF − 1)) + every consumer group
  reading the whole topic (produce × groups).
- Brokers needed = the largest of the disk need, the network need and the replication factor.
- Outage budget: to survive an outage of the consumers lasting O without losing a message,
  retention must be at least O (the oldest unread message is then O old, and catching up reads the
  oldest first); retention is raised to O when shorter. Catching up afterwards takes the O of
  backlog ÷ (what the partitions' consumers sustain − the target throughput).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class SizingError(ValueError):
    """An input that makes the calculation meaningless (zero, negative, out of range)."""


@dataclass(frozen=True)
class SizingInputs:
    target_messages_per_second: float
    bytes_per_message: float
    per_consumer_messages_per_second: float
    retention_hours: float
    replication_factor: int
    consumer_groups: int
    disk_bytes_per_broker: float
    network_bytes_per_second_per_broker: float
    max_disk_utilization: float = 0.7
    max_network_utilization: float = 0.7
    outage_budget_hours: float = 0.0  # the consumers' outage to survive; 0: none asked for


@dataclass(frozen=True)
class SizingResult:
    partitions: int  # minimum for the consumer throughput
    partitions_balanced: int  # rounded up to a multiple of `brokers`, so leaders spread evenly
    produce_bytes_per_second: float
    retained_bytes: float  # one copy of the retention window
    stored_bytes: float  # all replicas
    brokers_for_disk: int
    network_in_bytes_per_second: float  # whole cluster
    network_out_bytes_per_second: float  # whole cluster
    brokers_for_network: int
    brokers: int
    limited_by: str  # "disk" | "network" | "replication factor"
    disk_utilization: float  # per broker at `brokers`
    network_utilization: float  # busiest direction per broker at `brokers`
    retention_hours: float  # the retention sized for: the asked one, raised to the outage budget
    # After an outage of the budget, at full consumer capacity; None when that capacity does not
    # exceed the target throughput (the backlog never drains).
    catch_up_seconds: float | None


def _check(inputs: SizingInputs) -> None:
    positive = {
        "target throughput": inputs.target_messages_per_second,
        "bytes per message": inputs.bytes_per_message,
        "per-consumer throughput": inputs.per_consumer_messages_per_second,
        "retention": inputs.retention_hours,
        "disk per broker": inputs.disk_bytes_per_broker,
        "network per broker": inputs.network_bytes_per_second_per_broker,
    }
    for name, value in positive.items():
        if not value > 0 or math.isinf(value):
            raise SizingError(f"{name} must be a positive number")
    if inputs.replication_factor < 1:
        raise SizingError("replication factor must be at least 1")
    if inputs.consumer_groups < 0:
        raise SizingError("consumer groups cannot be negative")
    if not inputs.outage_budget_hours >= 0 or math.isinf(inputs.outage_budget_hours):
        raise SizingError("outage budget must be 0 or a positive number")
    for name, ratio in (
        ("max disk utilization", inputs.max_disk_utilization),
        ("max network utilization", inputs.max_network_utilization),
    ):
        if not 0 < ratio <= 1:
            raise SizingError(f"{name} must be in (0, 1]")


def size_cluster(inputs: SizingInputs) -> SizingResult:
    _check(inputs)
    rf = inputs.replication_factor
    partitions = math.ceil(
        inputs.target_messages_per_second / inputs.per_consumer_messages_per_second
    )
    produce = inputs.target_messages_per_second * inputs.bytes_per_message
    retention_hours = max(inputs.retention_hours, inputs.outage_budget_hours)
    retained = produce * retention_hours * 3600
    stored = retained * rf
    disk_capacity = inputs.disk_bytes_per_broker * inputs.max_disk_utilization
    brokers_disk = math.ceil(stored / disk_capacity)
    net_in = produce * rf
    net_out = produce * (rf - 1 + inputs.consumer_groups)
    net_capacity = inputs.network_bytes_per_second_per_broker * inputs.max_network_utilization
    brokers_net = math.ceil(max(net_in, net_out) / net_capacity)
    needs = {"disk": brokers_disk, "network": brokers_net, "replication factor": rf}
    limited_by = max(needs, key=lambda k: needs[k])  # ties: first in the dict wins
    brokers = needs[limited_by]
    return SizingResult(
        partitions=partitions,
        partitions_balanced=math.ceil(partitions / brokers) * brokers,
        produce_bytes_per_second=produce,
        retained_bytes=retained,
        stored_bytes=stored,
        brokers_for_disk=brokers_disk,
        network_in_bytes_per_second=net_in,
        network_out_bytes_per_second=net_out,
        brokers_for_network=brokers_net,
        brokers=brokers,
        limited_by=limited_by,
        disk_utilization=stored / brokers / inputs.disk_bytes_per_broker,
        network_utilization=max(net_in, net_out)
        / brokers
        / inputs.network_bytes_per_second_per_broker,
        retention_hours=retention_hours,
        catch_up_seconds=_catch_up_seconds(inputs, partitions),
    )


def _catch_up_seconds(inputs: SizingInputs, partitions: int) -> float | None:
    backlog = inputs.target_messages_per_second * inputs.outage_budget_hours * 3600
    drain = partitions * inputs.per_consumer_messages_per_second - inputs.target_messages_per_second
    if backlog == 0:
        return 0.0
    return backlog / drain if drain > 0 else None
