"""The one module that reaches into aiomqtt's and paho's private attributes stays honest.

When an upgrade of either library removes or changes an attribute it relies on, these
tests fail and name the attribute, instead of delivery silently stopping.
"""

from importlib import metadata

import aiomqtt
import pytest

from argentic_tools._transport import _internals

pytestmark = pytest.mark.anyio


def test_installed_mqtt_libraries_are_the_versions_the_internals_were_tested_with() -> None:
    for package, tested in _internals.TESTED_VERSIONS.items():
        installed = metadata.version(package)
        assert installed.split(".")[:2] == tested.split("."), (
            f"{package} {installed} is installed, but argentic_tools/_transport/_internals.py "
            f"was tested with {tested}.*: check every private attribute it uses"
        )


async def test_every_private_attribute_the_transport_uses_is_present() -> None:
    assert _internals.check_internals() == []


async def test_a_missing_private_attribute_is_reported_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = aiomqtt.Client.__init__

    def without_disconnected(self: aiomqtt.Client, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        del self._disconnected
        del self._client._registered_write

    monkeypatch.setattr(aiomqtt.Client, "__init__", without_disconnected)
    problems = _internals.check_internals()
    assert any(p.startswith("aiomqtt.Client._disconnected:") for p in problems), problems
    assert "paho.mqtt.client.Client._registered_write: missing" in problems
