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
    "pidentity_prefix_128.npz": "272a602cd1d340b18adc53c05ce45998828e4a01b93c241ddab41c694dafedf0",
    "pidentity_prefix_1536.npz": "ca01fb1637d96ab7baaac13d5421819c9eb909fd04f3c51b1b99cebbab464e85",
    "pidentity_prefix_192.npz": "ea97e0231d1a1fd9aa4d28be87a95016c3c1267d6a287f42a72e7fd8023b8183",
    "pidentity_prefix_2048.npz": "052ede7e94a6abd5d9e5cce770e3d6bd630d8540084451026ced19ad926f20ef",
    "pidentity_prefix_256.npz": "22ef54275ce6bbced0ab2febbaa154a67e976a214ed3794784b6af3d3ae5acfe",
    "pidentity_prefix_3072.npz": "45724cee3c8fd4e649422f5a06980842bd701240be853c6a8b40c26d3becf534",
    "pidentity_prefix_32.npz": "ebf2fcd0fcdd8de05a2c6a14f0154d4b479186865a1b4b3a3662bdd152dfd72a",
    "pidentity_prefix_384.npz": "33bd79ca567a90eb25e29793ce968cca98edfd41408e7c12216662b23f16eb8e",
    "pidentity_prefix_4096.npz": "ac2be29e6d5cf3d756c38a03f0f0cd2c87975645cb103bc4bbfc2947f569954e",
    "pidentity_prefix_48.npz": "53007a3aa1e7509973830d32da2ed652220269acd4b7a3828d5e07baa0c4a308",
    "pidentity_prefix_512.npz": "83d73d9975b912f7bf599d3c58d63e0c5a7ed8da597cdfa9a4f4638d00d56ace",
    "pidentity_prefix_64.npz": "ad24113c8fb710203d56f07c6a44d7ea937d8be843f4c7795bdfebdd1b6a4de9",
    "pidentity_prefix_768.npz": "7b918613b27413a65ac53b8cfd08ef8dcad8755d98d6bbb37bbfa3f50c33bf4a",
    "pidentity_prefix_96.npz": "5bfebee8b2459ee2c47153b7f9b5ebbcaa566787983a881a234cf90ddad557ed",
    "pidentity_range_1024.npz": "d13ecb9bead7c34923e05a79281f3b86028b211cad06e0f578f5ccd2042bace1",
    "pidentity_range_128.npz": "0c838918aa36f929419a4152fcd7716ce492bc0a38f42f07b63183e545e0bcd4",
    "pidentity_range_1536.npz": "51387853e1fd4d66f470e0512813ca711a363b9f7b3c1adb63fb53aed6d3f6ab",
    "pidentity_range_192.npz": "b45b35d5ea33acdbc031e2c8c3ab40ab2e1313805ed694b88b7df706e05f5974",
    "pidentity_range_2048.npz": "3fdeb3438358ddc8c10768af6af927a379299dbbc6bd11838903b4ffbf993e85",
    "pidentity_range_256.npz": "cea1f157dd63c8fe37814e8eb7e3995556a7c9dff4651e829ce997837af4f1e5",
    "pidentity_range_3072.npz": "a5012dd0659e3f44788229d6b338b0d9aa444294384b63003a85f752f912f6d6",
    "pidentity_range_32.npz": "02aa514411ad292e68c8cfb64779f01da15ebba1928c6a841a1ba2401d0a773e",
    "pidentity_range_384.npz": "a55fed746a1f1706c3d16d7a6bf0a980c61e2ce4c4ea8a5274c3b4973ea3483f",
    "pidentity_range_4096.npz": "22702c0906a0551bb9c5fb692bdbbd32a0a803bd117a1b2a1ad4f9886c545f75",
    "pidentity_range_48.npz": "3d41489cbb53669ebba4a297435d40e2b9c90edac9999dcbfa84349c39eaeb4f",
    "pidentity_range_512.npz": "55656c9b3ba5c17d7ad54d5a4e0539210493b63a22bcb8422bf28a1c60b4b080",
    "pidentity_range_768.npz": "697fa60f784f8e876e4d177310ca116f25c8c1fdf1a28839a230018233a7aa80",
    "pidentity_range_96.npz": "25536ce737210b8f7897976b024c816c70a97972fbbb0db17f6eb232d6fd9702",
    "pidentity_top_4096.npz": "d1c1aa761acc33a8be6eddf4ab42c2287e621cb440bfcbbbc70a2796f39f6cef",
}
