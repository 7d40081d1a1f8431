package pod

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccountDir is where a pod's service account token, CA and
// namespace are mounted (the kube-api-access projected volume).
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Pod is what a kubelet knows when it starts a container: the Deployment's
// pod template, the image's configuration and the API server's objects.
type Pod struct {
	// Deployment whose pod template is run.
	Deployment *appsv1.Deployment
	// Container is the name of the container to run.
	Container string
	// Image is the image's configuration (entrypoint, user, env).
	Image v1.Config
	// Name of the pod (metadata.name, the hostname).
	Name string
	// Client reads the ConfigMaps and Secrets of configMap and secret
	// volumes, as the kubelet does.
	Client client.Client
	// ServiceAccount is what the kube-api-access volume holds: a token of
	// the pod's service account and the cluster's CA.
	ServiceAccount ServiceAccount
	// APIServerHost and APIServerPort are the KUBERNETES_SERVICE_HOST and
	// _PORT the kubelet gives every container.
	APIServerHost string
	APIServerPort int
	// Dir receives the volumes' contents.
	Dir string
	// ExtraArgs are appended to the container's arguments: listen
	// addresses moved to free loopback ports, since the process shares
	// the host's network with other tests.
	ExtraArgs []string
	// EditFile lets the caller change a volume's file before it is
	// mounted (the webhook port in the component configuration); nil
	// changes nothing.
	EditFile func(volume, key string, data []byte) ([]byte, error)
}

// ServiceAccount is the content of the kube-api-access volume.
type ServiceAccount struct {
	Token  string
	CACert []byte
}

// DeploymentFrom converts a rendered Deployment.
func DeploymentFrom(u *unstructured.Unstructured) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		return nil, fmt.Errorf("deployment %s: %w", u.GetName(), err)
	}
	return d, nil
}

// Spec translates the pod into a container Spec as the kubelet would:
// command and arguments (Kubernetes' rules for command/args versus the
// image's entrypoint/cmd), environment (image, container, downward API,
// service links), the user with runAsNonRoot's checks, and each volume
// mount with its content written under Dir in the kubelet's layout
// (files behind a ..data symlink, defaultMode, root-owned).
func (p Pod) Spec(ctx context.Context, rootFS string) (Spec, error) {
	tmpl := p.Deployment.Spec.Template
	var c *corev1.Container
	for i := range tmpl.Spec.Containers {
		if tmpl.Spec.Containers[i].Name == p.Container {
			c = &tmpl.Spec.Containers[i]
		}
	}
	if c == nil {
		return Spec{}, fmt.Errorf("deployment %s has no container %q", p.Deployment.Name, p.Container)
	}
	s := Spec{RootFS: rootFS, Hostname: p.Name, WorkingDir: p.Image.WorkingDir}
	if c.WorkingDir != "" {
		s.WorkingDir = c.WorkingDir
	}

	// Command: the container's command replaces the entrypoint (and the
	// image's cmd); its args replace the image's cmd.
	switch {
	case len(c.Command) > 0:
		s.Argv = append(append([]string{}, c.Command...), c.Args...)
	case len(c.Args) > 0:
		s.Argv = append(append([]string{}, p.Image.Entrypoint...), c.Args...)
	default:
		s.Argv = append(append([]string{}, p.Image.Entrypoint...), p.Image.Cmd...)
	}
	s.Argv = append(s.Argv, p.ExtraArgs...)

	env, err := p.env(c)
	if err != nil {
		return Spec{}, err
	}
	s.Env = env

	if s.UID, s.GID, err = p.user(c); err != nil {
		return Spec{}, err
	}
	// Runtimes set HOME from the image's /etc/passwd when nobody set it.
	if !hasEnv(s.Env, "HOME") {
		s.Env = append(s.Env, "HOME="+home(rootFS, s.UID))
	}
	if sc := c.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil {
		s.ReadOnlyRoot = *sc.ReadOnlyRootFilesystem
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range tmpl.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return Spec{}, fmt.Errorf("volumeMount %s names no volume of the pod", vm.Name)
		}
		src, err := p.volume(ctx, v, tmpl.Spec.SecurityContext)
		if err != nil {
			return Spec{}, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		s.Mounts = append(s.Mounts, Mount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	automount := tmpl.Spec.AutomountServiceAccountToken == nil || *tmpl.Spec.AutomountServiceAccountToken
	if automount {
		src, err := p.writeFiles("kube-api-access", map[string][]byte{
			"token":     []byte(p.ServiceAccount.Token),
			"ca.crt":    p.ServiceAccount.CACert,
			"namespace": []byte(p.Deployment.Namespace),
		}, 0o644, 0)
		if err != nil {
			return Spec{}, err
		}
		s.Mounts = append(s.Mounts, Mount{Source: src, Target: ServiceAccountDir, ReadOnly: true})
	}
	return s, nil
}

func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// home is uid's home directory in the image's /etc/passwd, "/" without one.
func home(rootFS string, uid uint32) string {
	data, err := os.ReadFile(filepath.Join(rootFS, "etc", "passwd"))
	if err != nil {
		return "/"
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 6 && f[2] == strconv.FormatUint(uint64(uid), 10) && f[5] != "" {
			return f[5]
		}
	}
	return "/"
}

func (p Pod) env(c *corev1.Container) ([]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range p.Image.Env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	set("HOSTNAME", p.Name)
	set("KUBERNETES_SERVICE_HOST", p.APIServerHost)
	set("KUBERNETES_SERVICE_PORT", strconv.Itoa(p.APIServerPort))
	set("KUBERNETES_SERVICE_PORT_HTTPS", strconv.Itoa(p.APIServerPort))
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, e.Value)
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.namespace":
				set(e.Name, p.Deployment.Namespace)
			case "metadata.name":
				set(e.Name, p.Name)
			default:
				return nil, fmt.Errorf("env %s: fieldRef %s is not one this runner resolves", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		default:
			return nil, fmt.Errorf("env %s: only values and fieldRefs are resolved by this runner", e.Name)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out, nil
}

// user resolves the container's user as the kubelet does, refusing what
// runAsNonRoot refuses, with the kubelet's messages.
func (p Pod) user(c *corev1.Container) (uid, gid uint32, err error) {
	var runAsUser, runAsGroup *int64
	var nonRoot *bool
	if psc := p.Deployment.Spec.Template.Spec.SecurityContext; psc != nil {
		runAsUser, runAsGroup, nonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			runAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	imgUser, imgGroup, _ := strings.Cut(p.Image.User, ":")
	switch {
	case runAsUser != nil:
		uid = uint32(*runAsUser)
	case imgUser == "":
		uid = 0
	default:
		n, err := strconv.ParseUint(imgUser, 10, 32)
		if err != nil {
			if nonRoot != nil && *nonRoot {
				return 0, 0, fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root", imgUser)
			}
			return 0, 0, fmt.Errorf("image user %q is a name; this runner resolves numeric users only", imgUser)
		}
		uid = uint32(n)
	}
	if nonRoot != nil && *nonRoot && uid == 0 {
		if runAsUser != nil {
			return 0, 0, fmt.Errorf("container's runAsUser breaks non-root policy")
		}
		return 0, 0, fmt.Errorf("container has runAsNonRoot and image will run as root")
	}
	switch {
	case runAsGroup != nil:
		gid = uint32(*runAsGroup)
	case imgGroup != "" && runAsUser == nil:
		n, err := strconv.ParseUint(imgGroup, 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("image group %q is a name; this runner resolves numeric groups only", imgGroup)
		}
		gid = uint32(n)
	}
	return uid, gid, nil
}

// volume returns the host path holding v's content.
func (p Pod) volume(ctx context.Context, v corev1.Volume, psc *corev1.PodSecurityContext) (string, error) {
	var fsGroup int64 = -1
	if psc != nil && psc.FSGroup != nil {
		fsGroup = *psc.FSGroup
	}
	switch {
	case v.EmptyDir != nil:
		dir := filepath.Join(p.Dir, "volumes", "empty-dir", v.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		// The kubelet makes emptyDirs world-writable (0777), or group
		// writable by fsGroup.
		if err := os.Chmod(dir, 0o777); err != nil {
			return "", err
		}
		if fsGroup >= 0 {
			if err := os.Chown(dir, 0, int(fsGroup)); err != nil {
				return "", err
			}
		}
		return dir, nil
	case v.ConfigMap != nil:
		cm := &corev1.ConfigMap{}
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: p.Deployment.Namespace, Name: v.ConfigMap.Name}, cm); err != nil {
			return "", fmt.Errorf("configMap %s: %w", v.ConfigMap.Name, err)
		}
		files := map[string][]byte{}
		for k, s := range cm.Data {
			files[k] = []byte(s)
		}
		for k, b := range cm.BinaryData {
			files[k] = b
		}
		return p.projected(v.Name, files, v.ConfigMap.Items, v.ConfigMap.DefaultMode, fsGroup)
	case v.Secret != nil:
		sec := &corev1.Secret{}
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: p.Deployment.Namespace, Name: v.Secret.SecretName}, sec); err != nil {
			return "", fmt.Errorf("secret %s: %w", v.Secret.SecretName, err)
		}
		return p.projected(v.Name, sec.Data, v.Secret.Items, v.Secret.DefaultMode, fsGroup)
	}
	return "", fmt.Errorf("volume type not run by this runner (emptyDir, configMap and secret are)")
}

func (p Pod) projected(name string, files map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, fsGroup int64) (string, error) {
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) > 0 {
		picked := map[string][]byte{}
		for _, it := range items {
			picked[it.Path] = files[it.Key]
		}
		files = picked
	}
	if p.EditFile != nil {
		for k, data := range files {
			edited, err := p.EditFile(name, k, data)
			if err != nil {
				return "", err
			}
			files[k] = edited
		}
	}
	return p.writeFiles(name, files, mode, fsGroup)
}

// writeFiles lays files out as the kubelet's atomic writer does: a
// timestamped directory, ..data pointing at it, each name a symlink
// through ..data; files root-owned (group fsGroup when set) with mode.
func (p Pod) writeFiles(name string, files map[string][]byte, mode os.FileMode, fsGroup int64) (string, error) {
	dir := filepath.Join(p.Dir, "volumes", name)
	data := filepath.Join(dir, "..2026_11_23_00_00_00.000000000")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	var names []string
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		path := filepath.Join(data, k)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, files[k], mode); err != nil {
			return "", err
		}
		if err := os.Chmod(path, mode); err != nil {
			return "", err
		}
		if fsGroup >= 0 {
			if err := os.Chown(path, 0, int(fsGroup)); err != nil {
				return "", err
			}
		}
	}
	if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
		return "", err
	}
	for _, k := range names {
		top := strings.SplitN(k, "/", 2)[0]
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", top), link); err != nil {
			return "", err
		}
	}
	return dir, nil
}
