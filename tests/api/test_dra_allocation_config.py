"""status.allocation.devices.config: the class and claim configs a DRA driver reads, filled as kube's
structured allocator fills them (allocator_incubating.go, "Populate configs")."""
from __future__ import annotations

import pytest

from caldera.api.dra import DeviceResult, allocation_config, decode_device_class, decode_resource_claim
from caldera.errors import InputError
from caldera.live.prebind import allocation_of


def opaque(driver, **params):
    return {"opaque": {"driver": driver, "parameters": params}}


def cls(name, *configs):
    return decode_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                                "spec": {"config": list(configs)}})


def claim(requests, configs=()):
    return decode_resource_claim({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                  "metadata": {"name": "c", "namespace": "ns"},
                                  "spec": {"devices": {"requests": requests, "config": list(configs)}}})


def test_class_configs_once_with_every_request_of_the_class_then_the_claims():
    classes = {"gpu": cls("gpu", opaque("gpu.example.com", mode="shared")), "nic": cls("nic")}
    c = claim([{"name": "a", "exactly": {"deviceClassName": "gpu"}},
               {"name": "b", "exactly": {"deviceClassName": "gpu"}},
               {"name": "n", "exactly": {"deviceClassName": "nic"}}],
              [dict(opaque("gpu.example.com", all=True)), dict(opaque("gpu.example.com", only="b"), requests=["b"])])
    c.allocation = [DeviceResult("a", "gpu.example.com", "p", "d0"), DeviceResult("b", "gpu.example.com", "p", "d1"),
                    DeviceResult("n", "nic.example.com", "p", "n0")]
    assert allocation_config(c, classes) == [
        {"source": "FromClass", "requests": ["a", "b"],
         "opaque": {"driver": "gpu.example.com", "parameters": {"mode": "shared"}}},
        {"source": "FromClaim", "opaque": {"driver": "gpu.example.com", "parameters": {"all": True}}},
        {"source": "FromClaim", "requests": ["b"],
         "opaque": {"driver": "gpu.example.com", "parameters": {"only": "b"}}},
    ]


def test_first_available_uses_the_chosen_subrequests_class_and_name():
    classes = {"big": cls("big", opaque("gpu.example.com", size="big")),
               "small": cls("small", opaque("gpu.example.com", size="small"))}
    c = claim([{"name": "g", "firstAvailable": [{"name": "large", "deviceClassName": "big"},
                                                {"name": "tiny", "deviceClassName": "small"}]}],
              [dict(opaque("gpu.example.com", x=1), requests=["g/tiny"]),
               dict(opaque("gpu.example.com", x=2), requests=["g/large"])])
    c.allocation = [DeviceResult("g/tiny", "gpu.example.com", "p", "d0")]
    assert allocation_config(c, classes) == [
        {"source": "FromClass", "requests": ["g/tiny"],
         "opaque": {"driver": "gpu.example.com", "parameters": {"size": "small"}}},
        {"source": "FromClaim", "requests": ["g/tiny"],
         "opaque": {"driver": "gpu.example.com", "parameters": {"x": 1}}},
    ]


def test_the_status_write_carries_the_configs():
    classes = {"gpu": cls("gpu", opaque("gpu.example.com", mode="shared"))}
    c = claim([{"name": "a", "exactly": {"deviceClassName": "gpu"}}])
    c.allocation = [DeviceResult("a", "gpu.example.com", "p", "d0")]
    c.allocated_node = "n1"
    alloc = allocation_of(c, classes)
    assert alloc["devices"]["config"][0]["source"] == "FromClass"
    assert "config" not in allocation_of(c, {})["devices"]


@pytest.mark.parametrize(("config", "needle"), [
    ({"requests": ["a"]}, "opaque: Required value"),
    ({"opaque": {"parameters": {}}}, "opaque.driver"),
    ({"opaque": {"driver": "d"}}, "opaque.parameters: Required value"),
])
def test_a_config_without_its_driver_or_parameters_is_an_input_error(config, needle):
    with pytest.raises(InputError, match=needle):
        claim([{"name": "a", "exactly": {"deviceClassName": "gpu"}}], [config])
