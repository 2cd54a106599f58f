"""A made-up job kind, ``example.com/v1 ToyJob``, laid out as a built-in kind is: one folder
with its lifecycle, its webhook and the ``kind`` module that declares it."""
