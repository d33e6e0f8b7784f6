// The one program inside the kubelet tests' images (pause and probe), static, standard library only.
module kubedra/tests/kubelet/image

go 1.26.0
