"""Tree shapes over the bins, node indexing and query decompositions."""

from treedp.tree.shape import TreeShape, shape_for

__all__ = ["TreeShape", "shape_for"]
