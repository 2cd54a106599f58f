// Command mpi-operator runs the MPIJob (kubeflow.org/v2beta1) controller of the pinned
// github.com/kubeflow/mpi-operator module on a development machine.
//
// Upstream's command cannot be configured for that: it always campaigns for a Lease
// (leader election cannot be turned off, and needs a namespace of its own), and serves
// its health check on the fixed port 8080 and its metrics on every interface. This
// command builds the same controller (controller.NewMPIJobController with the informers
// upstream gives it) without leader election, and serves /healthz, /readyz and /metrics
// on the loopback addresses it is given. It is ready once the controller's informers
// have synced. The operator has no admission webhooks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeflow/mpi-operator/cmd/mpi-operator/app/options"
	mpiclientset "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned"
	mpischeme "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned/scheme"
	mpiinformers "github.com/kubeflow/mpi-operator/pkg/client/informers/externalversions"
	"github.com/kubeflow/mpi-operator/pkg/controller"
)

func main() {
	// The options package registers klog's flags (-v, ...) when it is imported.
	opt := options.NewServerOption()
	var probeAddr, metricsAddr string
	flag.StringVar(&opt.Kubeconfig, "kubeconfig", "", "path to a kubeconfig (required)")
	flag.StringVar(&opt.Namespace, "namespace", "", "watch only this namespace (default: all)")
	flag.IntVar(&opt.Threadiness, "threadiness", 2, "worker threads of the controller")
	flag.IntVar(&opt.QPS, "kube-api-qps", 5, "QPS to the API server")
	flag.IntVar(&opt.Burst, "kube-api-burst", 10, "burst to the API server")
	flag.IntVar(&opt.ControllerRateLimit, "controller-queue-rate-limit", 10, "rate limit of the work queue")
	flag.IntVar(&opt.ControllerBurst, "controller-queue-burst", 100, "burst of the work queue")
	flag.StringVar(&opt.ClusterDomain, "cluster-domain", "", "cluster domain of the MPI host file entries")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "host:port of /healthz and /readyz")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "host:port of /metrics (0 disables it)")
	flag.Parse()

	if err := run(opt, probeAddr, metricsAddr); err != nil {
		klog.ErrorS(err, "mpi-operator stopped")
		klog.Flush()
		os.Exit(1)
	}
}

func run(opt *options.ServerOption, probeAddr, metricsAddr string) error {
	if opt.Kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opt.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS = float32(opt.QPS)
	cfg.Burst = opt.Burst
	kubeClient, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "mpi-operator"))
	if err != nil {
		return err
	}
	mpiClient, err := mpiclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// As upstream: stop at once when MPIJobs cannot be listed (no CRD, or no right to).
	if _, err := mpiClient.KubeflowV2beta1().MPIJobs(opt.Namespace).List(context.Background(),
		metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing MPIJobs: %w", err)
	}
	// Events about MPIJobs need their kind in the scheme the recorder uses.
	if err := mpischeme.AddToScheme(clientgoscheme.Scheme); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var kubeOpts []kubeinformers.SharedInformerOption
	var mpiOpts []mpiinformers.SharedInformerOption
	if opt.Namespace != metav1.NamespaceAll {
		kubeOpts = append(kubeOpts, kubeinformers.WithNamespace(opt.Namespace))
		mpiOpts = append(mpiOpts, mpiinformers.WithNamespace(opt.Namespace))
	}
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeOpts...)
	mpiFactory := mpiinformers.NewSharedInformerFactoryWithOptions(mpiClient, 0, mpiOpts...)
	// No gang scheduling: neither a Volcano nor a scheduler-plugins client.
	mpiController, err := controller.NewMPIJobController(ctx, kubeClient, mpiClient, nil, nil,
		kubeFactory.Core().V1().ConfigMaps(),
		kubeFactory.Core().V1().Secrets(),
		kubeFactory.Core().V1().Services(),
		kubeFactory.Batch().V1().Jobs(),
		kubeFactory.Core().V1().Pods(),
		kubeFactory.Scheduling().V1().PriorityClasses(),
		mpiFactory.Kubeflow().V2beta1().MPIJobs(),
		opt)
	if err != nil {
		return err
	}
	kubeFactory.Start(ctx.Done())
	mpiFactory.Start(ctx.Done())

	var synced atomic.Bool
	go func() {
		for _, done := range kubeFactory.WaitForCacheSync(ctx.Done()) {
			if !done {
				return
			}
		}
		for _, done := range mpiFactory.WaitForCacheSync(ctx.Done()) {
			if !done {
				return
			}
		}
		synced.Store(true)
	}()

	errs := make(chan error, 3)
	probes := http.NewServeMux()
	probes.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	probes.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !synced.Load() {
			http.Error(w, "informers have not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	go serve(ctx, probeAddr, probes, errs)
	if metricsAddr != "0" {
		metrics := http.NewServeMux()
		metrics.Handle("/metrics", promhttp.Handler())
		go serve(ctx, metricsAddr, metrics, errs)
	}
	go func() { errs <- mpiController.Run(opt.Threadiness, ctx.Done()) }()

	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		return nil
	}
}

func serve(ctx context.Context, addr string, handler http.Handler, errs chan<- error) {
	server := &http.Server{Addr: addr, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs <- fmt.Errorf("serving %s: %w", addr, err)
	}
}
