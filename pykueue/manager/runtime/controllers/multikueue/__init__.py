"""MultiKueue in a manager cluster: worker connections and the admission check controller."""
