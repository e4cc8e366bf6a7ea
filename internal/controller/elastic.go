package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Elastic training: Paddle's elastic launcher (python -m
// paddle.distributed.launch --elastic_server ...) rendezvouses in etcd and
// watches /paddle/<job id>/np for the worker count. The operator keeps that
// key equal to the job's worker replicas, gives the pods the PADDLE_ELASTIC_*
// variables, and replaces failed workers (restart policy OnFailure by
// default); the endpoint lists and the mounted /etc/paddlejob files follow
// membership as for any scaled job.

// DefaultElasticTimeout is PADDLE_ELASTIC_TIMEOUT when the job names none.
const DefaultElasticTimeout = 600

// npKey is where Paddle's elastic launcher reads the worker count.
func npKey(job *paddlev1.PaddleJob) string {
	return "/paddle/" + job.Namespace + "-" + job.Name + "/np"
}

// elasticEndpoints are the etcd endpoints of a job: its own, else the
// operator's.
func elasticEndpoints(job *paddlev1.PaddleJob, operatorDefault []string) []string {
	if p := job.Spec.ElasticPolicy; p != nil && len(p.EtcdEndpoints) > 0 {
		return p.EtcdEndpoints
	}
	return operatorDefault
}

// elasticEnv is the PADDLE_ELASTIC_* environment of an elastic job's pods.
func elasticEnv(job *paddlev1.PaddleJob, endpoints []string) []corev1.EnvVar {
	if !job.Spec.IsElastic() {
		return nil
	}
	minR, maxR := job.Spec.ElasticBounds()
	np := strconv.Itoa(int(minR))
	if maxR > minR {
		np = fmt.Sprintf("%d:%d", minR, maxR)
	}
	timeout := int32(DefaultElasticTimeout)
	if p := job.Spec.ElasticPolicy; p != nil && p.TimeoutSeconds != nil {
		timeout = *p.TimeoutSeconds
	}
	env := []corev1.EnvVar{
		{Name: "PADDLE_ELASTIC_JOB_ID", Value: job.Namespace + "-" + job.Name},
		{Name: "PADDLE_ELASTIC_NP", Value: np},
		{Name: "PADDLE_ELASTIC_TIMEOUT", Value: strconv.Itoa(int(timeout))},
	}
	if len(endpoints) > 0 {
		hosts := make([]string, len(endpoints))
		for i, e := range endpoints {
			hosts[i] = strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
		}
		env = append([]corev1.EnvVar{{Name: "PADDLE_ELASTIC_SERVER", Value: strings.Join(hosts, ",")}}, env...)
	}
	return env
}

// elasticSync keeps the np keys of elastic jobs current in their etcd.
type elasticSync struct {
	defaults []string
	// newClient connects to etcd; replaced in tests of the bookkeeping.
	newClient func(endpoints []string) (npStore, error)

	mu      sync.Mutex
	clients map[string]npStore
	written map[types.NamespacedName]writtenNP
}

// npStore is the part of an etcd client the sync uses.
type npStore interface {
	Put(ctx context.Context, key, value string) error
	Delete(ctx context.Context, key string) error
}

type writtenNP struct {
	endpoints []string
	key       string
	value     string
}

func newElasticSync(defaults []string) *elasticSync {
	return &elasticSync{
		defaults:  defaults,
		newClient: dialEtcd,
		clients:   map[string]npStore{},
		written:   map[types.NamespacedName]writtenNP{},
	}
}

// sync writes a running elastic job's np key when it changed. Without an
// etcd the job still runs (the operator itself needs none), and an event
// says Paddle's elastic launcher will not find its peers.
func (e *elasticSync) sync(ctx context.Context, recorder events.EventRecorder, job *paddlev1.PaddleJob) {
	if !job.Spec.IsElastic() {
		return
	}
	key := types.NamespacedName{Namespace: job.Namespace, Name: job.Name}
	endpoints := elasticEndpoints(job, e.defaults)
	value := strconv.Itoa(job.Spec.ReplicaCount(paddlev1.ReplicaWorker))
	e.mu.Lock()
	last, seen := e.written[key]
	e.mu.Unlock()
	if len(endpoints) == 0 {
		if !seen {
			recorder.Eventf(job, nil, corev1.EventTypeWarning, "NoElasticServer", "Sync",
				"no etcd for elastic training: set spec.elasticPolicy.etcdEndpoints or the operator's --elastic-etcd-endpoints")
			e.mu.Lock()
			e.written[key] = writtenNP{}
			e.mu.Unlock()
		}
		return
	}
	if seen && last.value == value && last.key == npKey(job) && strings.Join(last.endpoints, ",") == strings.Join(endpoints, ",") {
		return
	}
	store, err := e.client(endpoints)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = store.Put(ctx, npKey(job), value)
		cancel()
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "writing the elastic np key", "key", npKey(job))
		recorder.Eventf(job, nil, corev1.EventTypeWarning, "ElasticSyncFailed", "Sync", "writing %s=%s to etcd %s: %v", npKey(job), value, strings.Join(endpoints, ","), err)
		return
	}
	e.mu.Lock()
	e.written[key] = writtenNP{endpoints: endpoints, key: npKey(job), value: value}
	e.mu.Unlock()
}

// forget deletes the np key of a job that finished or is gone.
func (e *elasticSync) forget(ctx context.Context, key types.NamespacedName) {
	e.mu.Lock()
	last, ok := e.written[key]
	delete(e.written, key)
	e.mu.Unlock()
	if !ok || last.key == "" {
		return
	}
	store, err := e.client(last.endpoints)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = store.Delete(ctx, last.key)
		cancel()
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "deleting the elastic np key", "key", last.key)
	}
}

func (e *elasticSync) client(endpoints []string) (npStore, error) {
	id := strings.Join(endpoints, ",")
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clients[id]; ok {
		return c, nil
	}
	c, err := e.newClient(endpoints)
	if err != nil {
		return nil, err
	}
	e.clients[id] = c
	return c, nil
}

// etcdStore writes np keys with an etcd v3 client.
type etcdStore struct{ c *clientv3.Client }

func dialEtcd(endpoints []string) (npStore, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %s: %w", strings.Join(endpoints, ","), err)
	}
	return etcdStore{c}, nil
}

func (s etcdStore) Put(ctx context.Context, key, value string) error {
	_, err := s.c.Put(ctx, key, value)
	return err
}

func (s etcdStore) Delete(ctx context.Context, key string) error {
	_, err := s.c.Delete(ctx, key)
	return err
}
