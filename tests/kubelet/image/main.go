// The program in the kubelet tests' images, static (CGO_ENABLED=0), standard library only.
//
// As /pause (the pod sandbox image) it waits for SIGTERM or SIGINT and reaps children.
// As /probe (the test containers) it prints what the container was given, one fact a line:
//
//	ENV KEY=VALUE               each environment variable, sorted
//	DEV /dev/PATH c MAJ:MIN     each character device under /dev
//	OPEN /dev/PATH ok|ERRNO     opening each /dev/nvidia* node read-write (the device cgroup's answer:
//	                            EPERM when it denies; ENXIO when it allows and no driver is behind the node)
//	FILE PATH LINE              each line of each file named in PROBE_FILES (space-separated)
//	READY                       all of the above is printed
//
// then waits for SIGTERM (prints TERM and exits 0).
package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

func main() {
	if filepath.Base(os.Args[0]) == "pause" {
		pause()
		return
	}
	probe()
}

func pause() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

func probe() {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	env := os.Environ()
	sort.Strings(env)
	for _, kv := range env {
		fmt.Println("ENV " + kv)
	}
	var nvidia []string
	_ = filepath.WalkDir("/dev", func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.Type()&fs.ModeCharDevice == 0 {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil {
			return nil
		}
		dev := uint64(st.Rdev) // glibc's gnu_dev_major / gnu_dev_minor
		major := (dev>>8)&0xfff | (dev>>32)&0xfffff000
		minor := dev&0xff | (dev>>12)&0xffffff00
		fmt.Printf("DEV %s c %d:%d\n", path, major, minor)
		if strings.HasPrefix(path, "/dev/nvidia") {
			nvidia = append(nvidia, path)
		}
		return nil
	})
	for _, path := range nvidia {
		fd, err := syscall.Open(path, syscall.O_RDWR, 0)
		if err == nil {
			syscall.Close(fd)
			fmt.Printf("OPEN %s ok\n", path)
			continue
		}
		name := fmt.Sprint(err)
		if errno, isErrno := err.(syscall.Errno); isErrno {
			name = errnoName(errno)
		}
		fmt.Printf("OPEN %s %s\n", path, name)
	}
	for _, path := range strings.Fields(os.Getenv("PROBE_FILES")) {
		file, err := os.Open(path)
		if err != nil {
			fmt.Printf("FILE %s error: %v\n", path, err)
			continue
		}
		lines := bufio.NewScanner(file)
		for lines.Scan() {
			fmt.Printf("FILE %s %s\n", path, lines.Text())
		}
		file.Close()
	}
	fmt.Println("READY")
	<-term
	fmt.Println("TERM")
}

func errnoName(errno syscall.Errno) string {
	switch errno {
	case syscall.EPERM:
		return "EPERM"
	case syscall.ENXIO:
		return "ENXIO"
	case syscall.ENODEV:
		return "ENODEV"
	case syscall.EACCES:
		return "EACCES"
	case syscall.ENOENT:
		return "ENOENT"
	}
	return fmt.Sprintf("errno %d (%v)", int(errno), errno)
}
