"""The SHA-256 (:attr:`Strategy.digest <treedp.strategy.model.Strategy.digest>`) of every
strategy shipped in ``treedp/strategy/data``: :func:`treedp.strategy.store.shipped_strategy`
refuses a file whose weights do not match, so a shipped file replaced or corrupted after
installation is never used (privacy would hold anyway — sensitivities are computed from the
loaded weights — but the stated errors would not). Regenerating a file
(:mod:`treedp.strategy.generate`, ``benchmarks/pure_large.py --write-inner``) means updating its
line here.
"""

from __future__ import annotations

__all__ = ["SHIPPED_DIGESTS"]

SHIPPED_DIGESTS: dict[str, str] = {
    "pidentity_inner15_128.npz": "336d14e211e48022922a88da6f41ec9dd57cefa44acffa733e1ac064e60031ea",
    "pidentity_inner16_256.npz": "41dd34774839e1d32c9aea594c2cc3a4dc90cf43209cb94a99a4489e454f7cd5",
    "pidentity_inner17_128.npz": "42a658a250b9b59f5d7f1e3ec98a37eb37b01d8f3f9ee6c951be6e201ea65609",
    "pidentity_inner18_256.npz": "b4090cec6c4f8f70d5aaa06233c5fc84dd773380d92cc5981ab550b63810ce41",
    "pidentity_inner19_128.npz": "b785e48d94edf6520d6e1bd7abcb31707641a52e417a78cb2815d6ddd9b3f59d",
    "pidentity_inner20_256.npz": "857142392a37197e713434cf686e9e937a3c2cdb9091fe2f12233f4db8431679",
    "pidentity_prefix_1024.npz": "42e19a9528a3cff9ff5c9ffc938d6c3045d0e31b2680f835f7f7016667bcbe60",
    "pidentity_prefix_2048.npz": "052ede7e94a6abd5d9e5cce770e3d6bd630d8540084451026ced19ad926f20ef",
    "pidentity_prefix_256.npz": "22ef54275ce6bbced0ab2febbaa154a67e976a214ed3794784b6af3d3ae5acfe",
    "pidentity_prefix_4096.npz": "ac2be29e6d5cf3d756c38a03f0f0cd2c87975645cb103bc4bbfc2947f569954e",
    "pidentity_prefix_512.npz": "83d73d9975b912f7bf599d3c58d63e0c5a7ed8da597cdfa9a4f4638d00d56ace",
    "pidentity_range_1024.npz": "d13ecb9bead7c34923e05a79281f3b86028b211cad06e0f578f5ccd2042bace1",
    "pidentity_range_2048.npz": "3fdeb3438358ddc8c10768af6af927a379299dbbc6bd11838903b4ffbf993e85",
    "pidentity_range_256.npz": "cea1f157dd63c8fe37814e8eb7e3995556a7c9dff4651e829ce997837af4f1e5",
    "pidentity_range_4096.npz": "22702c0906a0551bb9c5fb692bdbbd32a0a803bd117a1b2a1ad4f9886c545f75",
    "pidentity_range_512.npz": "55656c9b3ba5c17d7ad54d5a4e0539210493b63a22bcb8422bf28a1c60b4b080",
    "pidentity_top_4096.npz": "d1c1aa761acc33a8be6eddf4ab42c2287e621cb440bfcbbbc70a2796f39f6cef",
}
