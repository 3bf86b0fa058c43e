"""Broker URLs: what they parse into, and what they refuse."""

import pytest

from argentic_tools import BrokerURL


def test_broker_url_parses_credentials_port_and_tls() -> None:
    url = BrokerURL.parse("mqtts://al%40ice:s3cret@broker.local:8884")
    assert (url.host, url.port, url.username, url.password, url.tls) == (
        "broker.local",
        8884,
        "al@ice",
        "s3cret",
        True,
    )
    assert BrokerURL.parse("localhost").port == 1883
    assert BrokerURL.parse("mqtts://h").port == 8883
    assert str(BrokerURL.parse("mqtt://h:1")) == "mqtt://h:1"


@pytest.mark.parametrize("bad", ["http://host:1883", "mqtt://:1883", "mqtt://host:99999"])
def test_broker_url_rejects_what_it_cannot_use(bad: str) -> None:
    with pytest.raises(ValueError, match=r"broker URL|scheme"):
        BrokerURL.parse(bad)
