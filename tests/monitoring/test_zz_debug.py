import json
from tests.monitoring.conftest import rule_expressions
def test_debug(backfilled):
    api = backfilled.api
    R = rule_expressions()
    r = api.range(R["KafkaConsumerGroupUnhealthy"], backfilled.start, backfilled.end())
    print(json.dumps([(x["metric"], len(x["values"]), x["values"][:5]) for x in r])[:1500])
    r = api.range('kafka_consumergroup_status{consumergroup="billing"}', backfilled.start, backfilled.end(), 60)
    print([v[1] for v in r[0]["values"]])
    r = api.range('kafka_consumergroup_lag_sum{consumergroup="billing"}', backfilled.start, backfilled.end(), 60)
    print([v[1] for v in r[0]["values"]])
    r = api.range('kafka_consumergroup_partition_status{consumergroup="billing"}', backfilled.start, backfilled.end(), 60)
    print([(x["metric"]["partition"], [v[1] for v in x["values"]]) for x in r])
