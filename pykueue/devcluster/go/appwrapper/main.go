// Command appwrapper runs the AppWrapper controller and its admission webhooks, from the
// pinned github.com/project-codeflare/appwrapper module, on a development machine.
//
// The AppWrapper release is meant to run beside an external Kueue: it reconciles
// AppWrappers (creating the wrapped objects once Kueue unsuspends one, deleting them when
// Kueue suspends it again) and leaves queueing to Kueue, which pykueue plays here. Its own
// command cannot be configured for a host process, though: it reads its configuration from
// a ConfigMap of its namespace (creating it when missing), its webhook server listens on
// every interface at the fixed port 9443, and a certificate rotator keeps a CA in a Secret
// and patches the release's webhook configurations. This command builds the same pieces
// through the module's public setup functions (controller.SetupWebhooks, SetupControllers
// and SetupProbeEndpoints) into a controller-runtime manager whose servers listen on the
// given loopback addresses, serving the certificate found in --cert-dir. The AppWrapper
// configuration comes from a file holding the release's ``appwrapper`` section; what it does
// not set keeps the release's defaults. Leader election is not offered: one replica runs.
// The controller's own phase counters live in an internal package and are not exported;
// controller-runtime's metrics are.
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
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	awv1beta2 "github.com/project-codeflare/appwrapper/api/v1beta2"
	"github.com/project-codeflare/appwrapper/pkg/config"
	"github.com/project-codeflare/appwrapper/pkg/controller"
)

func main() {
	var metricsAddr, probeAddr, webhookAddr, certDir, configFile string
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "host:port of the metrics endpoint (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "host:port of /healthz and /readyz")
	flag.StringVar(&webhookAddr, "webhook-bind-address", "127.0.0.1:9443", "host:port of the admission webhook server")
	flag.StringVar(&certDir, "cert-dir", "", "directory holding the webhook server's tls.crt and tls.key (required)")
	flag.StringVar(&configFile, "config", "", "YAML file of the AppWrapper configuration (default: the release's)")
	logOpts := zap.Options{Development: true}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
	log := ctrl.Log.WithName("setup")

	if err := run(metricsAddr, probeAddr, webhookAddr, certDir, configFile); err != nil {
		log.Error(err, "appwrapper stopped")
		os.Exit(1)
	}
}

func loadConfig(path string) (*config.AppWrapperConfig, error) {
	cfg := config.NewAppWrapperConfig()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, cfg); err != nil {
			return nil, err
		}
	}
	return cfg, config.ValidateAppWrapperConfig(cfg)
}

func run(metricsAddr, probeAddr, webhookAddr, certDir, configFile string) error {
	if certDir == "" {
		return errors.New("--cert-dir is required")
	}
	awConfig, err := loadConfig(configFile)
	if err != nil {
		return err
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
	utilruntime.Must(awv1beta2.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir}),
	})
	if err != nil {
		return err
	}
	// The certificate is on disk before the process starts: ready as soon as the webhook
	// server serves.
	certsReady := make(chan struct{})
	close(certsReady)
	if err := controller.SetupWebhooks(mgr, awConfig); err != nil {
		return err
	}
	if err := controller.SetupControllers(mgr, awConfig); err != nil {
		return err
	}
	if err := controller.SetupProbeEndpoints(mgr, certsReady); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
