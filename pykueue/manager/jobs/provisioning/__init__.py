"""Kueue's ProvisioningRequest admission check (``kueue.x-k8s.io/provisioning-request``), pure:
names, the requests and pod templates to create, and the check state a request's conditions
give. The controller in ``manager.runtime.controllers.provisioning`` carries it out."""
