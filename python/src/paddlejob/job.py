"""PaddleJob and CephFSVolume: the original paddle.job SDK's job description, built into the
PaddleJob object that `paddlejob submit` and the Go SDK (pkg/client
TrainingJob.Build) build from the same parameters. test/vectors/ holds the
cases both SDKs are tested against.

Beyond the original paddle.job SDK: collective jobs (``collective=True``: workers only), and
the job as YAML (``to_yaml``, ``PaddleJob.from_yaml``).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _shellwords
from ._imageref import image_problem
from .errors import ValidationError

API_VERSION = "batch.paddlepaddle.org/v1"
KIND = "PaddleJob"
GROUP, VERSION, PLURAL = "batch.paddlepaddle.org", "v1", "paddlejobs"

# The constants below are the CRD's and api/v1's: tests/unit/test_constants.py
# reads config/crd/bases and api/v1 and keeps them equal.
#: The longest job name: pod names <name>-worker-<index> must stay DNS labels.
MAX_JOB_NAME_LENGTH = 51
#: The largest replica count of one role.
MAX_REPLICAS = 10000
DEFAULT_PSERVERS = 2
DEFAULT_TRAINERS = 3
CONTAINER_NAME = "paddle"
#: The roles of a PaddleJob, as in pod names <job>-<role>-<index>.
ROLES = ("ps", "worker", "heter")
INTRANETS = ("PodIP", "Service", "Host")
CLEAN_POD_POLICIES = ("Always", "Never", "OnFailure", "OnCompletion")
RESTART_POLICIES = ("Never", "OnFailure", "ExitCode")
RESTART_SCOPES = ("Job", "Pod")
#: The labels of a job's pods.
LABEL_JOB_NAME = "batch.paddlepaddle.org/job-name"
LABEL_REPLICA_TYPE = "batch.paddlepaddle.org/replica-type"
LABEL_REPLICA_INDEX = "batch.paddlepaddle.org/replica-index"

_JOB_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MEMORY = re.compile(r"^[1-9][0-9]*[EPTGMK]i?$")
_MAX_BYTES = 2**63 - 1
_SUFFIXES = ["", "k", "M", "G", "T", "P", "E"]

_Problems = List[Tuple[str, str]]


def _quantity(n: int, power: int) -> str:
    """n * 1000**power written as Kubernetes writes it (1000M is 1G)."""
    while n % 1000 == 0 and power < len(_SUFFIXES) - 1:
        n //= 1000
        power += 1
    return f"{n}{_SUFFIXES[power]}"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _blank(s: Optional[str]) -> bool:
    return s is None or s.strip() == ""


class CephFSVolume:
    """A CephFS path mounted in every pod of the job (the original paddle.job SDK's cephfs_volume).

    ``monitors_addr`` is the Ceph monitors' address, ``"host:port"``; several
    may be given as a list or comma-separated. ``secret_name`` is the
    Kubernetes Secret holding the Ceph key (its content is never read here).
    """

    def __init__(
        self,
        monitors_addr: Union[str, Sequence[str]],
        user: str = "admin",
        secret_name: str = "cephfs-secret",
        mount_path: str = "/mnt/cephfs",
        path: str = "/",
    ) -> None:
        self.monitors_addr = monitors_addr
        self.user, self.secret_name, self.mount_path, self.path = user, secret_name, mount_path, path

    @property
    def monitors(self) -> List[str]:
        m = self.monitors_addr
        items = m.split(",") if isinstance(m, str) else list(m)
        return [x.strip() for x in items if isinstance(x, str) and x.strip()]

    def _problems(self) -> _Problems:
        out: _Problems = []
        m = self.monitors_addr
        if not isinstance(m, (str, list, tuple)) or (not isinstance(m, str) and not all(isinstance(x, str) for x in m)):
            out.append(("cephfs_volume.monitors_addr", f"cephfs_volume.monitors_addr {m!r}: must be a string \"host:port\" or a list of them"))
        elif not self.monitors:
            out.append(("cephfs_volume.monitors_addr", f"cephfs_volume.monitors_addr {m!r}: at least one Ceph monitor address is required"))
        for name in ("user", "secret_name", "mount_path", "path"):
            v = getattr(self, name)
            if not isinstance(v, str):
                out.append((f"cephfs_volume.{name}", f"cephfs_volume.{name} {v!r}: must be a string"))
        if isinstance(self.mount_path, str) and not _blank(self.mount_path) and not posixpath.isabs(self.mount_path):
            out.append(("cephfs_volume.mount_path", f"cephfs_volume.mount_path {self.mount_path!r}: the mount path must be absolute"))
        return out

    def _volume(self) -> Dict[str, Any]:
        return {
            "monitors": self.monitors,
            "path": self.path if not _blank(self.path) else "/",
            "secretRef": {"name": self.secret_name if not _blank(self.secret_name) else "cephfs-secret"},
            "user": self.user if not _blank(self.user) else "admin",
        }

    def _mount_path(self) -> str:
        return self.mount_path if not _blank(self.mount_path) else "/mnt/cephfs"

    def __repr__(self) -> str:
        return (
            f"CephFSVolume(monitors_addr={self.monitors_addr!r}, user={self.user!r}, secret_name={self.secret_name!r}, "
            f"mount_path={self.mount_path!r}, path={self.path!r})"
        )


class PaddleJob:
    """A training job: the original paddle.job SDK's ``paddle.job.PaddleJob``.

    Every pod (``pservers`` parameter servers and ``trainers`` trainers) runs
    ``entry_point`` from ``runtime_image`` in ``trainer_package_path``, with
    ``cpu_nums`` CPUs and ``memory`` (an integer with E, P, T, G, M or K,
    powers of 1000, or Ei, Pi, Ti, Gi, Mi or Ki, powers of 1024; omitted: no
    memory request). Trainers get ``gpu_nums`` GPUs. The original paddle.job SDK example's
    spellings ``cpu_num`` and ``use_gpu`` are accepted too (``use_gpu=True``
    alone means one GPU per trainer).

    ``collective=True`` makes a collective job instead: ``trainers`` workers
    and no parameter server (``pservers`` is then not given), typically with
    ``entry_point="python -m paddle.distributed.launch train.py"``.

    Beyond the original paddle.job SDK: ``env`` (variables for every container), ``intranet``
    (PodIP, Service or Host), ``clean_pod_policy`` (Always, Never,
    OnFailure, OnCompletion), ``restart_policy`` of the pservers and trainers
    (Never, OnFailure, ExitCode: a failure the policy restarts brings every pod
    of the job back) and ``progress_deadline_seconds`` (the job is restarted,
    or failed under Never, when its program reports no progress for that
    long; see docs/lifecycle.md).

    Bad values raise :class:`paddlejob.ValidationError` (a ValueError) naming
    every bad parameter, when the job is created.
    """

    def __init__(
        self,
        job_name: str,
        runtime_image: str,
        entry_point: str,
        cpu_nums: Optional[int] = None,
        memory: Optional[str] = None,
        pservers: Optional[int] = None,
        trainers: int = DEFAULT_TRAINERS,
        gpu_nums: Optional[int] = None,
        namespace: str = "default",
        trainer_package_path: Optional[str] = None,
        cephfs_volume: Optional[CephFSVolume] = None,
        *,
        cpu_num: Optional[int] = None,
        use_gpu: Optional[bool] = None,
        env: Optional[Mapping[str, str]] = None,
        intranet: Optional[str] = None,
        clean_pod_policy: Optional[str] = None,
        restart_policy: Optional[str] = None,
        progress_deadline_seconds: Optional[int] = None,
        collective: bool = False,
    ) -> None:
        problems: _Problems = []

        def bad(param: str, msg: str) -> None:
            problems.append((param, msg))

        if cpu_nums is not None and cpu_num is not None and cpu_nums != cpu_num:
            bad("cpu_num", f"cpu_num {cpu_num!r}: disagrees with cpu_nums {cpu_nums!r} (cpu_num is the original paddle.job SDK's spelling of cpu_nums: give one)")
        cpus = cpu_nums if cpu_nums is not None else cpu_num
        if use_gpu is not None and not isinstance(use_gpu, bool):
            bad("use_gpu", f"use_gpu {use_gpu!r}: must be True or False")
        elif use_gpu is False and gpu_nums:
            bad("use_gpu", f"use_gpu False: disagrees with gpu_nums {gpu_nums!r}")
        gpus = gpu_nums if gpu_nums is not None else (1 if use_gpu is True else 0)

        self.job_name, self.runtime_image, self.entry_point = job_name, runtime_image, entry_point
        if not isinstance(collective, bool):
            bad("collective", f"collective {collective!r}: must be True or False")
        elif collective and pservers is not None:
            bad("pservers", f"pservers {pservers!r}: a collective job has no parameter servers (leave pservers out)")
        self.collective = collective is True
        if pservers is None and not self.collective:
            pservers = DEFAULT_PSERVERS
        self.cpu_nums, self.memory, self.gpu_nums = cpus, memory, gpus
        self.pservers: Optional[int] = pservers if not self.collective else None
        self.trainers = trainers
        self.namespace = namespace if isinstance(namespace, str) and namespace != "" else "default"
        self.trainer_package_path = trainer_package_path
        self.cephfs_volume = cephfs_volume
        self.env: Dict[str, str] = dict(env) if isinstance(env, Mapping) else {}
        self.intranet, self.clean_pod_policy = intranet, clean_pod_policy
        self.restart_policy, self.progress_deadline_seconds = restart_policy, progress_deadline_seconds

        if not isinstance(job_name, str) or not _JOB_NAME.match(job_name) or len(job_name) > MAX_JOB_NAME_LENGTH:
            bad("job_name", f"job_name {job_name!r}: must be lowercase letters, digits and '-', start with a letter and have at most {MAX_JOB_NAME_LENGTH} characters")
        if not isinstance(runtime_image, str) or runtime_image == "":
            bad("runtime_image", f"runtime_image {runtime_image!r}: the runtime image is required")
        elif (why := image_problem(runtime_image)) is not None:
            bad("runtime_image", f"runtime_image {runtime_image!r}: {why}")
        self._command: List[str] = []
        try:
            self._command = _shellwords.split(entry_point) if isinstance(entry_point, str) else []
        except ValueError:
            pass
        if not self._command:
            bad("entry_point", f"entry_point {entry_point!r}: must be a command line such as \"python train.py\"")
        if trainer_package_path is not None and (not isinstance(trainer_package_path, str) or (trainer_package_path != "" and not posixpath.isabs(trainer_package_path))):
            bad("trainer_package_path", f"trainer_package_path {trainer_package_path!r}: must be an absolute path in the image")
        if cpus is None:
            bad("cpu_nums", "cpu_nums: the CPU count of each pod is required")
        elif not _is_int(cpus) or cpus < 1:
            bad("cpu_nums", f"cpu_nums {cpus!r}: must be an integer, at least 1")
        self._memory = self._memory_quantity(memory, bad)
        if not _is_int(gpus) or gpus < 0:
            bad("gpu_nums", f"gpu_nums {gpus!r}: must be an integer, not negative")
        for param, v in (("pservers", self.pservers), ("trainers", trainers)):
            if param == "pservers" and self.collective:
                continue
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_REPLICAS:
                bad(param, f"{param} {v!r}: must be an integer between 1 and {MAX_REPLICAS}")
        if not isinstance(namespace, str):
            bad("namespace", f"namespace {namespace!r}: must be a string")
        if cephfs_volume is not None:
            if isinstance(cephfs_volume, CephFSVolume):
                problems.extend(cephfs_volume._problems())
            else:
                bad("cephfs_volume", f"cephfs_volume {cephfs_volume!r}: must be a paddlejob.CephFSVolume")
        if env is not None and (not isinstance(env, Mapping) or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in env.items())):
            bad("env", f"env {env!r}: must map variable names to string values")
        if intranet is not None and intranet not in INTRANETS:
            bad("intranet", f"intranet {intranet!r}: want one of {', '.join(INTRANETS)}")
        if clean_pod_policy is not None and clean_pod_policy not in CLEAN_POD_POLICIES:
            bad("clean_pod_policy", f"clean_pod_policy {clean_pod_policy!r}: want one of {', '.join(CLEAN_POD_POLICIES)}")
        if restart_policy is not None and restart_policy not in RESTART_POLICIES:
            bad("restart_policy", f"restart_policy {restart_policy!r}: want one of {', '.join(RESTART_POLICIES)}")
        if progress_deadline_seconds is not None and (not _is_int(progress_deadline_seconds) or progress_deadline_seconds < 0):
            bad("progress_deadline_seconds", f"progress_deadline_seconds {progress_deadline_seconds!r}: must be an integer, not negative (0: none)")
        if problems:
            raise ValidationError(problems)

    @staticmethod
    def _memory_quantity(memory: Any, bad: Callable[[str, str], None]) -> Optional[str]:
        if memory is None or memory == "":
            return None
        if not isinstance(memory, str) or not _MEMORY.match(memory):
            bad("memory", f"memory {memory!r}: must be a plain integer with one of the suffixes E, P, T, G, M, K (powers of 1000, for example 8G) "
                          "or Ei, Pi, Ti, Gi, Mi, Ki (powers of 1024, for example 8Gi)")
            return None
        binary = memory.endswith("i")
        digits, suffix = (memory[:-2], memory[-2]) if binary else (memory[:-1], memory[-1])
        power = "KMGTPE".index(suffix) + 1
        n = int(digits)
        if n * (1024 if binary else 1000) ** power > _MAX_BYTES:
            bad("memory", f"memory {memory!r}: must be at most 9223372036854775807 bytes (9E, 7Ei)")
            return None
        # Kubernetes keeps a binary quantity as written.
        return memory if binary else _quantity(n, power)

    def _template(self, gpus: int) -> Dict[str, Any]:
        requests: Dict[str, str] = {"cpu": _quantity(int(self.cpu_nums or 0), 0)}
        if self._memory is not None:
            requests["memory"] = self._memory
        limits = dict(requests)
        if gpus > 0:
            limits["nvidia.com/gpu"] = _quantity(gpus, 0)
        container: Dict[str, Any] = {
            "name": CONTAINER_NAME,
            "image": self.runtime_image,
            "command": list(self._command),
            "resources": {"requests": requests, "limits": limits},
        }
        if self.trainer_package_path:
            container["workingDir"] = self.trainer_package_path
        spec: Dict[str, Any] = {"containers": [container]}
        if self.cephfs_volume is not None:
            container["volumeMounts"] = [{"name": "data-0", "mountPath": self.cephfs_volume._mount_path()}]
            spec["volumes"] = [{"name": "data-0", "cephfs": self.cephfs_volume._volume()}]
        if self.env:
            container["env"] = [{"name": k, "value": self.env[k]} for k in sorted(self.env)]
        return {"spec": spec}

    def to_dict(self) -> Dict[str, Any]:
        """The PaddleJob object this job submits."""
        spec: Dict[str, Any] = {}
        if not self.collective:
            spec["ps"] = {"replicas": self.pservers, "template": self._template(0)}
        spec["worker"] = {"replicas": self.trainers, "template": self._template(int(self.gpu_nums or 0))}
        if self.intranet:
            spec["intranet"] = self.intranet
        if self.clean_pod_policy:
            spec["cleanPodPolicy"] = self.clean_pod_policy
        if self.restart_policy:
            for role in ("ps", "worker"):
                if role in spec:
                    spec[role]["restartPolicy"] = self.restart_policy
        if self.progress_deadline_seconds:
            spec["progressDeadlineSeconds"] = self.progress_deadline_seconds
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.job_name, "namespace": self.namespace},
            "spec": spec,
        }

    def to_yaml(self) -> str:
        """The PaddleJob object this job submits, as YAML (``kubectl apply -f`` takes it).
        Needs PyYAML, which the kubernetes client brings."""
        import yaml

        return str(yaml.safe_dump(self.to_dict(), sort_keys=False))

    @classmethod
    def from_yaml(cls, text: str) -> "PaddleJob":
        """The PaddleJob of a YAML document (its first PaddleJob): see :meth:`from_dict`."""
        import yaml

        for doc in yaml.safe_load_all(text):
            if isinstance(doc, dict) and doc.get("kind") == KIND:
                return cls.from_dict(doc)
        raise ValidationError([("yaml", f"yaml: no document of kind {KIND} ({API_VERSION})")])

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> "PaddleJob":
        """The parameters of a PaddleJob object of the shape :meth:`to_dict`
        builds (one container per role, the same in every role but the GPUs),
        as ``paddlejob submit --dry-run`` or ``to_yaml`` write it. What those
        parameters cannot say (another shape, more fields) raises
        ValidationError naming it: write such a job as a dict and pass that
        to ``PaddleJobClient.create_job``."""
        return _from_dict(obj)

    def __repr__(self) -> str:
        if self.collective:
            return f"PaddleJob(job_name={self.job_name!r}, namespace={self.namespace!r}, runtime_image={self.runtime_image!r}, collective=True, trainers={self.trainers})"
        return f"PaddleJob(job_name={self.job_name!r}, namespace={self.namespace!r}, runtime_image={self.runtime_image!r}, pservers={self.pservers}, trainers={self.trainers})"


# Fields of a role and of the spec that to_dict writes; anything else is a
# shape the parameters cannot express.
_SPEC_FIELDS = {"ps", "worker", "intranet", "cleanPodPolicy", "progressDeadlineSeconds"}
_ROLE_FIELDS = {"replicas", "template", "restartPolicy"}
_CONTAINER_FIELDS = {"name", "image", "command", "workingDir", "resources", "volumeMounts", "env"}


def _count(q: Any) -> Any:
    """A whole count as Kubernetes writes it ("3", "1k"), as an int; anything
    else as it is, for PaddleJob to refuse by name."""
    if isinstance(q, int):
        return q
    m = re.fullmatch(r"([1-9][0-9]*|0)([kMGTPE]?)", str(q))
    if not m:
        return q
    power = "kMGTPE".index(m.group(2)) + 1 if m.group(2) else 0
    return int(m.group(1)) * 1000**power


def _from_dict(obj: Mapping[str, Any]) -> PaddleJob:
    def unsupported(where: str, what: Any) -> ValidationError:
        return ValidationError([(where, f"{where} {what!r}: the PaddleJob parameters cannot express it; submit the object as a dict instead")])

    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != KIND:
        raise ValidationError([("kind", f"apiVersion {obj.get('apiVersion')!r}, kind {obj.get('kind')!r}: want {API_VERSION}, {KIND}")])
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    for k in spec:
        if k not in _SPEC_FIELDS:
            raise unsupported(f"spec.{k}", spec[k])
    if "worker" not in spec:
        raise ValidationError([("spec.worker", "spec.worker: a PaddleJob needs workers")])
    containers: Dict[str, Dict[str, Any]] = {}
    volumes: Dict[str, Any] = {}
    for role in ("ps", "worker"):
        rs = spec.get(role)
        if rs is None:
            continue
        for k in rs:
            if k not in _ROLE_FIELDS:
                raise unsupported(f"spec.{role}.{k}", rs[k])
        pod = (rs.get("template") or {}).get("spec") or {}
        if set(pod) - {"containers", "volumes"} or len(pod.get("containers") or []) != 1:
            raise unsupported(f"spec.{role}.template.spec", pod)
        c = pod["containers"][0]
        for k in c:
            if k not in _CONTAINER_FIELDS:
                raise unsupported(f"spec.{role}.template.spec.containers[0].{k}", c[k])
        containers[role] = c
        volumes[role] = pod.get("volumes") or []
    worker = containers["worker"]
    ps = containers.get("ps")
    same = ("image", "command", "workingDir", "volumeMounts", "env")
    if ps is not None and any(ps.get(k) != worker.get(k) for k in same) or (ps is not None and volumes["ps"] != volumes["worker"]):
        raise unsupported("spec.ps.template", "a pserver unlike the trainers")
    if spec.get("ps") and spec["ps"].get("restartPolicy") != spec["worker"].get("restartPolicy"):
        raise unsupported("spec.ps.restartPolicy", spec["ps"].get("restartPolicy"))

    requests = (worker.get("resources") or {}).get("requests") or {}
    limits = (worker.get("resources") or {}).get("limits") or {}
    gpus = _count(limits.get("nvidia.com/gpu", 0))
    cpu = _count(requests.get("cpu"))
    memory = requests.get("memory")
    if isinstance(memory, str) and memory.endswith("k"):
        memory = memory[:-1] + "K"  # the original paddle.job SDK's notation of Kubernetes' k
    mounts = worker.get("volumeMounts") or []
    cephfs: Optional[CephFSVolume] = None
    vols = volumes["worker"]
    if vols or mounts:
        if len(vols) != 1 or len(mounts) != 1 or "cephfs" not in vols[0]:
            raise unsupported("volumes", vols)
        ceph = vols[0]["cephfs"]
        cephfs = CephFSVolume(monitors_addr=list(ceph.get("monitors") or []), user=ceph.get("user", "admin"),
                              secret_name=(ceph.get("secretRef") or {}).get("name", "cephfs-secret"),
                              mount_path=mounts[0].get("mountPath", "/mnt/cephfs"), path=ceph.get("path", "/"))
    env = {e["name"]: e.get("value", "") for e in worker.get("env") or [] if isinstance(e, Mapping) and "valueFrom" not in e}
    if len(env) != len(worker.get("env") or []):
        raise unsupported("env", worker.get("env"))
    return PaddleJob(
        job_name=meta.get("name", ""), namespace=meta.get("namespace") or "default", runtime_image=worker.get("image", ""),
        entry_point=_shellwords.join(worker.get("command") or []), cpu_nums=cpu,
        memory=memory, gpu_nums=gpus, trainers=spec["worker"].get("replicas", 1),
        pservers=spec["ps"].get("replicas", 1) if "ps" in spec else None, collective="ps" not in spec,
        trainer_package_path=worker.get("workingDir"), cephfs_volume=cephfs, env=env or None,
        intranet=spec.get("intranet"), clean_pod_policy=spec.get("cleanPodPolicy"),
        restart_policy=spec["worker"].get("restartPolicy"), progress_deadline_seconds=spec.get("progressDeadlineSeconds"),
    )
