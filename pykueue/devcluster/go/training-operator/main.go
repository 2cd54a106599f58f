// Command training-operator runs the Kubeflow training operator's job controllers and
// admission webhooks, from the pinned github.com/kubeflow/training-operator module, on a
// development machine.
//
// Upstream's own command cannot be configured for that: it always starts a certificate
// rotator that keeps its CA in a Secret, writes into a fixed temporary directory, and
// issues a certificate only for the in-cluster Service name, and its webhook server
// listens on every interface. This command wires the same reconcilers and webhooks
// (controllerv1.SupportedSchemeReconciler, webhooks.SupportedSchemeWebhook) into a
// controller-runtime manager whose webhook server listens on the given address and
// serves the certificate found in --cert-dir. Leader election is not offered: the dev
// cluster runs one replica.
package main

import (
	"errors"
	"flag"
	"net"
	"os"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/config"
	controllerv1 "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
	"github.com/kubeflow/training-operator/pkg/webhooks"
)

func main() {
	var (
		metricsAddr string
		probeAddr   string
		webhookAddr string
		certDir     string
		namespace   string
		threads     int
		schemes     controllerv1.EnabledSchemes
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "host:port of the metrics endpoint (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "host:port of /healthz and /readyz")
	flag.StringVar(&webhookAddr, "webhook-bind-address", "127.0.0.1:9443", "host:port of the admission webhook server")
	flag.StringVar(&certDir, "cert-dir", "", "directory holding the webhook server's tls.crt and tls.key (required)")
	flag.StringVar(&namespace, "namespace", "", "watch only this namespace (default: all)")
	flag.IntVar(&threads, "controller-threads", 1, "worker threads per controller")
	flag.Var(&schemes, "enable-scheme", "job kind to run, repeatable (e.g. pytorchjob); default: all kinds")
	flag.StringVar(&config.Config.PyTorchInitContainerImage, "pytorch-init-container-image",
		config.PyTorchInitContainerImageDefault, "image of the init container of PyTorchJob workers")
	flag.StringVar(&config.Config.PyTorchInitContainerTemplateFile, "pytorch-init-container-template-file",
		config.PyTorchInitContainerTemplateFileDefault, "template of that init container")
	flag.IntVar(&config.Config.PyTorchInitContainerMaxTries, "pytorch-init-container-max-tries",
		config.PyTorchInitContainerMaxTriesDefault, "tries of that init container")
	flag.StringVar(&config.Config.MPIKubectlDeliveryImage, "mpi-kubectl-delivery-image",
		config.MPIKubectlDeliveryImageDefault, "image of the MPI launcher's init container")
	logOpts := zap.Options{Development: true}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
	log := ctrl.Log.WithName("setup")

	if err := run(metricsAddr, probeAddr, webhookAddr, certDir, namespace, threads, schemes); err != nil {
		log.Error(err, "training-operator stopped")
		os.Exit(1)
	}
}

func run(metricsAddr, probeAddr, webhookAddr, certDir, namespace string, threads int,
	schemes controllerv1.EnabledSchemes) error {
	if certDir == "" {
		return errors.New("--cert-dir is required")
	}
	host, portText, err := net.SplitHostPort(webhookAddr)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))

	options := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir}),
	}
	if namespace != "" {
		options.Cache.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), options)
	if err != nil {
		return err
	}
	if schemes.Empty() {
		schemes.FillAll()
	}
	for _, kind := range schemes {
		if err := controllerv1.SupportedSchemeReconciler[kind](mgr, common.GenNonGangSchedulerSetupFunc(), threads); err != nil {
			return err
		}
		setupWebhook, ok := webhooks.SupportedSchemeWebhook[kind]
		if !ok {
			return errors.New("no webhook for " + kind)
		}
		if err := setupWebhook(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready once the webhook server serves: the dev cluster registers the webhook
	// configurations only then, so no request is sent to a server that is not listening.
	if err := mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
