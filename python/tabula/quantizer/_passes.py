"""The FX passes run on the captured float graph before the unsupported-op check and annotation, in
order (one list: :func:`tabula.quantizer.passes` and :meth:`TabulaQuantizer.transform_for_annotation`
both read it)."""
from __future__ import annotations


def float_passes() -> list:
    """``[(name, function(gm))]`` in the order they run."""
    from .decompose_ops_pass import decompose_ops
    from .fold_constants_pass import fold_constants
    from .fuse_silu_pass import fuse_silu
    from .fuse_softsign_pass import fuse_softsign
    from .remove_identities_pass import remove_identities
    from .rewrite_div_pass import rewrite_div
    from .unroll_recurrent_pass import unroll_recurrent

    # identities first: a clone between a conv and its BatchNorm or ReLU must not hide the pair; the
    # decompositions before folding (zeros_like of a constant folds); the recurrence after folding: its
    # initial state (torch.zeros) is then a constant; its sigmoids are gates (never x * sigmoid(x)), so
    # fuse_silu may run before it; softsign is fused before rewrite_div would take its division apart
    return [("remove_identities", remove_identities), ("decompose_ops", decompose_ops), ("fold_constants", fold_constants),
            ("fuse_silu", fuse_silu), ("fuse_softsign", fuse_softsign),
            ("rewrite_div", rewrite_div), ("unroll_recurrent", unroll_recurrent)]
