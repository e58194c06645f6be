// gocrypto: the public-key steps of a Go aTLS client handshake (crypto/ecdsa P-256 with Go's
// assembly, golang.org/x/crypto's X25519 as crypto/tls uses it), each timed N times; prints
// "CRYPTO <step> <median us>" like join_bench --crypto, for join-latency.sh.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"golang.org/x/crypto/curve25519"
)

func step(name string, n int, f func()) {
	d := make([]time.Duration, n)
	for i := range d {
		t := time.Now()
		f()
		d[i] = time.Since(t)
	}
	sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
	fmt.Printf("CRYPTO %s %.1f\n", name, float64(d[n/2].Nanoseconds())/1000)
}

func main() {
	n := 200
	if len(os.Args) == 2 {
		if v, err := strconv.Atoi(os.Args[1]); err == nil && v > 0 {
			n = v
		}
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	h := sha256.Sum256([]byte("transcript"))
	sig, _ := ecdsa.SignASN1(rand.Reader, key, h[:])
	sk := make([]byte, 32)
	rand.Read(sk)
	peer, _ := curve25519.X25519(sk, curve25519.Basepoint)
	step("p256_keygen", n, func() { key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader) })
	step("p256_ecdsa_sign", n, func() { sig, _ = ecdsa.SignASN1(rand.Reader, key, h[:]) })
	step("p256_ecdsa_verify", n, func() {
		if !ecdsa.VerifyASN1(&key.PublicKey, h[:], sig) {
			panic("verify")
		}
	})
	step("x25519_ecdhe", n, func() {
		rand.Read(sk)
		curve25519.X25519(sk, curve25519.Basepoint)
		curve25519.X25519(sk, peer)
	})
}
