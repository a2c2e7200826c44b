"""The AWS deployment profile: plan (pure), render, apply and destroy (boto3).

`build_plan` turns pipeline_contract/pipeline.toml plus deploy options into the exact resources and
settings; `apply_plan` makes AWS match it idempotently; `destroy_plan` removes only what
carries this stack's tag.
"""
